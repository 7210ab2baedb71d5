"""The real `determined` 0.38.1 client reads a trial's metrics by group from our master.

A trial reports with the real Core API (its allocation token), `train.report_metrics` for a
group of its own; then automation code logs in as a user and reads them back with
`client.get_trial(id).iter_metrics(group)` (GetMetrics), the deprecated
`stream_training_metrics`/`stream_validation_metrics` (GetTrainingMetrics and
GetValidationMetrics) and `client.iter_trials_metrics` over several trials.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services import allocations
from controlplane.services.auth import client_hash
from tests.compat.conftest import PASSWORD, RunningMaster

pytestmark = [pytest.mark.compat, pytest.mark.slow]

REPORT = r"""
import determined as det
from determined import core, _info
info = det.ClusterInfo._from_env(); info._trial_info = det.TrialInfo._from_env()
info._rendezvous_info = det.RendezvousInfo(["127.0.0.1"], 0, [1])
info._resources_info = det.ResourcesInfo([])
_info._info = info
with core.init(tensorboard_mode=core.TensorboardMode.MANUAL) as ctx:
    for step in (30, 10, 20):
        ctx.train.report_metrics("inference", step, {"acc": step / 100, "n": step})
    ctx.train.report_training_metrics(steps_completed=10, metrics={"loss": 0.5})
    ctx.train.report_validation_metrics(steps_completed=10, metrics={"loss": 0.25})
"""

READ = r"""
import json, os, sys, warnings
warnings.simplefilter("ignore", FutureWarning)
from determined.experimental import client
from determined.common.api import errors
client.login(master=os.environ["MASTER"], user="admin", password=os.environ["PASSWORD"])
t1, t2 = (int(x) for x in sys.argv[1:3])
trial = client.get_trial(t1)

def row(m):
    return [m.trial_id, m.trial_run_id, m.steps_completed, m.metrics, m.group,
            m.end_time.tzinfo is not None]

out = {
    "inference": [row(m) for m in trial.iter_metrics("inference")],
    "training": [row(m) for m in trial.iter_metrics("training")],
    "validation": [row(m) for m in trial.iter_metrics("validation")],
    "old_training": [row(m) for m in trial.stream_training_metrics()],
    "old_validation": [row(m) for m in trial.stream_validation_metrics()],
    "both": [
        [m.trial_id, m.steps_completed] for m in client.iter_trials_metrics([t2, t1], "inference")
    ],
    "none": [row(m) for m in trial.iter_metrics("nothing-here")],
}
try:
    list(client.get_trial(999999).iter_metrics("inference"))
except errors.NotFoundException as exc:
    out["missing"] = str(exc)
print("RESULT " + json.dumps(out))
"""


async def _open_allocation(db_url: str, task_id: str) -> allocations.OpenedAllocation:
    engine = make_engine(db_url)
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            return await allocations.open_allocation(
                session, task_id, slots=1, resource_pool="default", now=datetime.now(UTC)
            )
    finally:
        await engine.dispose()


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("DET_")}, **extra}


def test_the_real_client_reads_metrics_by_group(
    det_bin: Path, running_master: RunningMaster, tmp_path: Path
) -> None:
    body = {"username": "admin", "password": client_hash(PASSWORD), "isHashed": True}
    token = httpx.post(f"{running_master.url}/api/v1/auth/login", json=body).json()["token"]
    api = httpx.Client(base_url=running_master.url, headers={"Authorization": f"Bearer {token}"})
    config = (
        "name: metrics-by-group\nentrypoint: python3 train.py\n"
        "searcher: {name: random, metric: loss, max_trials: 2, max_length: 10}\n"
        "hyperparameters: {lr: {type: double, minval: 0.1, maxval: 1.0}}\n"
    )
    r = api.post("/api/v1/experiments", json={"config": config})
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]
    t1, t2 = sorted(
        api.get(f"/api/v1/experiments/{exp['id']}/trials").json()["trials"], key=lambda t: t["id"]
    )
    opened = asyncio.run(_open_allocation(running_master.db_url, t1["taskId"]))
    task_env = _env(
        DET_MASTER=running_master.url,
        DET_CLUSTER_ID="c",
        DET_AGENT_ID="agent-1",
        DET_SLOT_IDS="[0]",
        DET_TASK_ID=t1["taskId"],
        DET_ALLOCATION_ID=opened.allocation_id,
        DET_SESSION_TOKEN=opened.token,
        DET_TASK_TYPE="TRIAL",
        DET_USER="admin",
        DET_TRIAL_ID=str(t1["id"]),
        DET_EXPERIMENT_ID=str(exp["id"]),
        DET_TRIAL_SEED="0",
        DET_HPARAMS="{}",
        DET_STEPS_COMPLETED="0",
        DET_TRIAL_RUN_ID="1",
        DET_EXPERIMENT_CONFIG=json.dumps(exp["config"]),
    )
    python = str(det_bin / "python")
    proc = subprocess.run(
        [python, "-c", REPORT], env=task_env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the second trial's one report, straight through the API
    r = api.post(
        f"/api/v1/trials/{t2['id']}/metrics",
        json={
            "group": "inference",
            "metrics": {"trialRunId": 1, "stepsCompleted": 5, "metrics": {"avgMetrics": {"n": 5}}},
        },
    )
    assert r.status_code == 200, r.text

    read_env = _env(
        MASTER=running_master.url,
        PASSWORD=PASSWORD,
        DET_DEBUG_CONFIG_PATH=str(tmp_path / "cfg"),
    )
    proc = subprocess.run(
        [python, "-c", READ, str(t1["id"]), str(t2["id"])],
        env=read_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = json.loads(re.search(r"^RESULT (.*)$", proc.stdout, re.M).group(1))  # type: ignore[union-attr]
    t = t1["id"]
    assert got["inference"] == [
        [t, 1, step, {"acc": step / 100, "n": step}, "inference", True] for step in (10, 20, 30)
    ]
    assert got["training"] == [[t, 1, 10, {"loss": 0.5}, "training", True]]
    assert got["validation"] == [[t, 1, 10, {"loss": 0.25}, "validation", True]]
    assert got["old_training"] == got["training"]
    assert got["old_validation"] == got["validation"]
    assert got["both"] == [[t, 10], [t, 20], [t, 30], [t2["id"], 5]]
    assert got["none"] == []
    assert "trial 999999 not found" in got["missing"]
