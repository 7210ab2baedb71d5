"""`det trial profiler` against a live master: the system metrics a trial's profiler reported,
one row per series (and a plain line when there are none)."""

from __future__ import annotations

from cli.profiler_summary import profiler_rows
from tests.cli.commands.conftest import StartMaster, det_for, fails, ok, table_rows

EXP = "name: prof\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n"


def _report(trial_id: int, group: str, steps: int, avg: dict[str, object]) -> dict[str, object]:
    metrics = {"avgMetrics": avg, "batchMetrics": None}
    return {
        "group": group,
        "metrics": {"trialId": trial_id, "trialRunId": 0, "stepsCompleted": steps,
                    "reportTime": None, "metrics": metrics},
    }  # fmt: skip


async def test_trial_profiler_table(start_master: StartMaster) -> None:
    m = await start_master()
    exp = await m.post("/api/v1/experiments", {"config": EXP, "activate": False})
    trials = (await m.get(f"/api/v1/experiments/{exp['experiment']['id']}/trials"))["trials"]
    trial_id = trials[0]["id"]
    det = det_for(m)
    out = ok(await det("trial", "profiler", str(trial_id)))
    assert "has no system metrics" in out

    for steps, util in ((1, 20.0), (2, 40.0)):
        body = _report(trial_id, "cpu", steps, {"agent-1": {"cpu_util_simple": util}})
        await m.post(f"/api/v1/trials/{trial_id}/metrics", body)
    gpu = {"agent-1": {"GPU-0": {"gpu_util": 75.0, "gpu_free_memory": 1024.0}}}
    await m.post(f"/api/v1/trials/{trial_id}/metrics", _report(trial_id, "gpu", 1, gpu))

    rows = table_rows(ok(await det("trial", "profiler", str(trial_id))))
    by_name = {r[0]: r for r in rows}
    assert by_name["cpu_util_simple"][1:8] == ["agent-1", "", "2", "30", "20", "40", "40"]
    assert by_name["gpu_util"][1:4] == ["agent-1", "GPU-0", "1"]
    fails(await det("trial", "profiler", "99999"), "99999")


def test_rows_skip_empty_series_and_format_big_numbers() -> None:
    batches = [
        {"batch": {"values": [], "labels": {"name": "x"}}},
        {"batch": {"values": [2e9, 4e9], "timestamps": ["a", "b"],
                   "labels": {"name": "memory_free", "agentId": "a"}}},
    ]  # fmt: skip
    assert profiler_rows(batches) == [
        ["memory_free", "a", "", 2, "3.000e+09", "2.000e+09", "4.000e+09", "4.000e+09", "b"]
    ]
