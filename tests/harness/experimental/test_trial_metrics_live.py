"""Our client's ``Trial.iter_metrics`` reads any group from a live master's metric stream
(GetMetrics), on both databases, as Determined's client does."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from harness._session import APIError
from harness.experimental import client
from harness.experimental._trial import _timestamp
from tests.conftest import PASSWORD
from tests.support.live_master import StartMaster

CONFIG = (
    "name: metrics\nentrypoint: python3 train.py\n"
    "searcher: {name: single, metric: loss, max_length: 10}\n"
)


def _report(group: str, steps: int, avg: dict[str, Any], **extra: Any) -> dict[str, Any]:
    metrics = {"avgMetrics": avg, **extra}
    return {
        "group": group,
        "metrics": {"trialRunId": 1, "stepsCompleted": steps, "metrics": metrics},
    }


def _read(url: str, trial_id: int) -> dict[str, Any]:
    d = client.Determined(master=url, user="admin", password=PASSWORD)
    trial = d.get_trial(trial_id)
    out: dict[str, Any] = {
        group: list(trial.iter_metrics(group))
        for group in ("inference", "training", "validation", "unreported")
    }
    out["old_validation"] = list(trial.stream_validation_metrics())
    try:
        list(client.Trial(trial_id + 1000, d._session).iter_metrics("inference"))
    except APIError as exc:
        out["missing"] = exc
    return out


async def test_iter_metrics_reads_any_group(start_master: StartMaster) -> None:
    m = await start_master()
    exp = (await m.post("/api/v1/experiments", {"config": CONFIG}))["experiment"]
    trial_id = (await m.get(f"/api/v1/experiments/{exp['id']}/trials"))["trials"][0]["id"]
    reports = [
        _report("inference", 20, {"acc": 0.8}),
        _report("inference", 10, {"acc": 0.6}),
        _report("training", 10, {"loss": 0.5}, batchMetrics=[{"loss": 0.6}, {"loss": 0.4}]),
        _report("validation", 10, {"loss": 0.25}),
    ]
    await m.post(f"/api/v1/trials/{trial_id}/metrics/batch", {"reports": reports})

    got = await asyncio.to_thread(_read, m.url, trial_id)
    inference = got["inference"]
    assert [(x.steps_completed, x.metrics, x.group) for x in inference] == [
        (10, {"acc": 0.6}, "inference"),
        (20, {"acc": 0.8}, "inference"),
    ]
    assert {(x.trial_id, x.trial_run_id) for x in inference} == {(trial_id, 1)}
    assert all(isinstance(x.end_time, datetime.datetime) for x in inference)
    assert inference[0].end_time.tzinfo is not None
    (training,) = got["training"]
    assert training.metrics == {"loss": 0.5}
    assert training.batch_metrics == [{"loss": 0.6}, {"loss": 0.4}]
    (validation,) = got["validation"]
    assert (validation.metrics, validation.group) == ({"loss": 0.25}, "validation")
    assert [(x.metrics, x.group) for x in got["old_validation"]] == [({"loss": 0.25}, "validation")]
    assert got["unreported"] == []
    assert got["missing"].status == 404
    assert f"trial {trial_id + 1000} not found" in got["missing"].message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-02T03:04:05Z", datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)),
        (
            "2026-01-02T03:04:05.123Z",
            datetime.datetime(2026, 1, 2, 3, 4, 5, 123000, tzinfo=datetime.UTC),
        ),
        (
            "2026-01-02T03:04:05.123456789+00:00",
            datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.UTC),
        ),
        ("not a time", "not a time"),
        (None, None),
    ],
)
def test_report_times_parse_as_determined_gives_them(text: Any, expected: Any) -> None:
    assert _timestamp(text) == expected
