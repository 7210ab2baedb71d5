"""`det … logs` filters (cli/log_filters.py, cli/logs.py): what each flag puts on the wire,
for trials, experiments (their first trial), commands, notebooks and TensorBoards."""

from __future__ import annotations

import pytest
import typer

from cli.log_filters import Level, filter_params, levels_at_or_above
from tests.cli.fake_master import FakeMaster, logged_in, ndjson, run_det


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        (None, []),
        ("CRITICAL", ["LOG_LEVEL_CRITICAL"]),
        (Level.WARNING, ["LOG_LEVEL_WARNING", "LOG_LEVEL_ERROR", "LOG_LEVEL_CRITICAL"]),
        ("TRACE", [f"LOG_LEVEL_{lv}" for lv in Level]),
    ],
)
def test_levels_at_or_above(level: str | None, expected: list[str]) -> None:
    assert levels_at_or_above(level) == expected


def test_filter_params_leave_out_what_is_not_given() -> None:
    assert filter_params() == {}
    assert filter_params(agent_ids=["a"], rank_ids=[0, 2], level="ERROR") == {
        "agentIds": ["a"],
        "rankIds": [0, 2],
        "levels": ["LOG_LEVEL_ERROR", "LOG_LEVEL_CRITICAL"],
    }
    assert filter_params(timestamp_after="2021-10-26T23:17:12Z") == {
        "timestampAfter": "2021-10-26T23:17:12Z"
    }


@pytest.mark.parametrize("stamp", ["yesterday", "2021-10-26T23:17:12", ""])
def test_a_time_without_zone_or_form_is_refused(stamp: str) -> None:
    with pytest.raises(typer.BadParameter):
        filter_params(timestamp_before=stamp)


FLAGS = [
    "--agent-id", "a1", "--agent-id", "a2", "--container-id", "c1", "--rank-id", "1",
    "--timestamp-before", "2026-01-01T00:00:03Z", "--timestamp-after", "2026-01-01T00:00:01Z",
    "--level", "ERROR", "--source", "agent", "--stdtype", "stderr",
]  # fmt: skip
EXPECTED = {
    "agentIds": ["a1", "a2"],
    "containerIds": ["c1"],
    "rankIds": ["1"],
    "timestampBefore": ["2026-01-01T00:00:03Z"],
    "timestampAfter": ["2026-01-01T00:00:01Z"],
    "levels": ["LOG_LEVEL_ERROR", "LOG_LEVEL_CRITICAL"],
    "sources": ["agent"],
    "stdtypes": ["stderr"],
    "follow": ["false"],
}


def _master() -> FakeMaster:
    master = FakeMaster({"admin": "secret"})
    logged_in(master)
    line = {"id": 1, "message": "hello\n"}
    master.add("GET", "/api/v1/trials/7/logs", ndjson(line))
    master.add("GET", "/api/v1/tasks/t-1/logs", ndjson(line))
    master.add(
        "GET",
        "/api/v1/experiments/3/trials",
        {"trials": [{"id": 7}], "pagination": {"total": 1, "endIndex": 1}},
    )
    return master


def _params(master: FakeMaster, path: str) -> dict[str, list[str]]:
    (request,) = master.calls("GET", path)
    params = request.url.params
    return {key: params.get_list(key) for key in params}


@pytest.mark.parametrize(
    ("args", "path", "extra"),
    [
        (["trial", "logs", "7"], "/api/v1/trials/7/logs", {}),
        (["experiment", "logs", "3"], "/api/v1/trials/7/logs", {}),
        (
            ["cmd", "logs", "t-1", "--allocation-id", "t-1.0"],
            "/api/v1/tasks/t-1/logs",
            {"allocationIds": ["t-1.0"]},
        ),
        (["notebook", "logs", "t-1"], "/api/v1/tasks/t-1/logs", {}),
        (["tensorboard", "logs", "t-1"], "/api/v1/tasks/t-1/logs", {}),
    ],
)
def test_each_flag_reaches_the_query(
    args: list[str], path: str, extra: dict[str, list[str]]
) -> None:
    master = _master()
    result = run_det(master, *args, *FLAGS)
    assert result.exit_code == 0, result.output
    assert result.stdout == "hello\n"
    assert _params(master, path) == {**EXPECTED, **extra}


@pytest.mark.parametrize("args", [["trial", "logs", "7"], ["cmd", "logs", "t-1"]])
def test_head_asks_for_the_first_lines(args: list[str]) -> None:
    master = _master()
    result = run_det(master, *args, "--head", "5")
    assert result.exit_code == 0, result.output
    path = "/api/v1/trials/7/logs" if args[0] == "trial" else "/api/v1/tasks/t-1/logs"
    assert _params(master, path) == {"follow": ["false"], "limit": ["5"]}


def test_head_with_tail_or_follow_is_refused_and_bad_values_are_usage_errors() -> None:
    master = _master()
    for extra in (["--tail", "2"], ["-f"]):
        result = run_det(master, "trial", "logs", "7", "--head", "5", *extra)
        assert result.exit_code == 1 and "--head" in result.stderr, result.output
    result = run_det(master, "trial", "logs", "7", "--level", "LOUD")
    assert result.exit_code == 2
    result = run_det(master, "cmd", "logs", "t-1", "--timestamp-after", "noon")
    assert result.exit_code == 2 and "RFC 3339" in result.output
    assert not master.calls("GET", "/api/v1/trials/7/logs")
