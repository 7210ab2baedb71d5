"""The real `determined==0.38.1` client reads a trial's system metrics from our master: its
bindings' get_GetTrialProfilerAvailableSeries / get_GetTrialProfilerMetrics parse our streams."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.compat.conftest import PASSWORD, RunningMaster

pytestmark = [pytest.mark.compat, pytest.mark.slow]

CONFIG = "name: prof\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n"

READ = r"""
import json, os, warnings
warnings.simplefilter("ignore", FutureWarning)
from determined.common.api import authentication, bindings
sess = authentication.login(os.environ["MASTER"], "admin", os.environ["PASSWORD"])
trial = int(os.environ["TRIAL"])
series = list(bindings.get_GetTrialProfilerAvailableSeries(sess, trialId=trial))
batches = list(bindings.get_GetTrialProfilerMetrics(
    sess, labels_trialId=trial, labels_name="gpu_util",
    labels_metricType=bindings.TrialProfilerMetricLabelsProfilerMetricType.SYSTEM,
))
print("RESULT " + json.dumps({
    "labels": sorted([l.name, l.agentId, l.gpuUuid] for s in series for l in s.labels),
    "gpu": [[b.batch.values, b.batch.batches, b.batch.labels.gpuUuid] for b in batches],
}))
"""


def _report(trial_id: int, group: str, steps: int, avg: dict[str, object]) -> dict[str, object]:
    metrics = {"avgMetrics": avg, "batchMetrics": None}
    return {
        "group": group,
        "metrics": {"trialId": trial_id, "trialRunId": 0, "stepsCompleted": steps,
                    "reportTime": None, "metrics": metrics},
    }  # fmt: skip


async def test_real_client_reads_profiler_series(
    det_bin: Path, running_master: RunningMaster, admin: dict[str, str]
) -> None:
    async with httpx.AsyncClient(base_url=running_master.url, headers=admin) as http:
        r = await http.post("/api/v1/experiments", json={"config": CONFIG, "activate": False})
        assert r.status_code == 200, r.text
        exp_id = r.json()["experiment"]["id"]
        trial_id = (await http.get(f"/api/v1/experiments/{exp_id}/trials")).json()["trials"][0][
            "id"
        ]
        for steps, util in ((1, 80.0), (2, 90.0)):
            gpu = {"a1": {"GPU-9": {"gpu_util": util, "gpu_free_memory": 5.0}}}
            r = await http.post(
                f"/api/v1/trials/{trial_id}/metrics", json=_report(trial_id, "gpu", steps, gpu)
            )
            assert r.status_code == 200, r.text
        cpu = {"a1": {"cpu_util_simple": 3.0}}
        r = await http.post(
            f"/api/v1/trials/{trial_id}/metrics", json=_report(trial_id, "cpu", 1, cpu)
        )
        assert r.status_code == 200, r.text

    env = {**os.environ, "MASTER": running_master.url, "PASSWORD": PASSWORD, "TRIAL": str(trial_id)}
    done = await asyncio.to_thread(
        subprocess.run,
        [str(det_bin / "python"), "-c", READ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    got = json.loads(line.removeprefix("RESULT "))
    assert got["labels"] == [
        ["cpu_util_simple", "a1", None],
        ["gpu_free_memory", "a1", "GPU-9"],
        ["gpu_util", "a1", "GPU-9"],
    ]
    assert got["gpu"] == [[[80.0, 90.0], [1, 2], "GPU-9"]]
