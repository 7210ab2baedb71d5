"""Level 2: the real `determined` 0.38.1 Core API reports to our master with an allocation token.

Until agents start containers (a later issue), the test opens the allocation itself through the
same service the scheduler will call, then runs the Core API exactly as `prep_container` would
set it up (reference wire §6 L2).
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

from controlplane.db.models import Allocation
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.domain.states import AllocationState
from controlplane.services import allocations, history
from controlplane.services.auth import client_hash
from tests.compat.conftest import PASSWORD, RunningMaster

pytestmark = [pytest.mark.compat, pytest.mark.slow]

SCRIPT = r"""
import json, os, sys
import determined as det
from determined import core, _info
info = det.ClusterInfo._from_env(); info._trial_info = det.TrialInfo._from_env()
info._rendezvous_info = det.RendezvousInfo(["127.0.0.1"], 0, [1])
info._resources_info = det.ResourcesInfo([])
_info._info = info
storage = os.environ["CKPT_DIR"]
with core.init(checkpoint_storage=storage, tensorboard_mode=core.TensorboardMode.MANUAL) as ctx:
    ctx.train.set_status("training")
    for step in (5, 10):
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    ctx.train.report_validation_metrics(steps_completed=10, metrics={"loss": 0.05, "acc": 0.9})
    ctx.train.report_progress(0.5)
    best = ctx.train.get_experiment_best_validation()
    with ctx.checkpoint.store_path({"steps_completed": 10}) as (path, uuid):
        (path / "w.txt").write_text("weights")
    meta = ctx.checkpoint.get_metadata(uuid)
    preempt = ctx.preempt.should_preempt()
    print("RESULT " + json.dumps({"best": best, "uuid": uuid, "meta": meta, "preempt": preempt}))
"""


async def _open_allocation(
    db_url: str, task_id: str, preempt: bool
) -> allocations.OpenedAllocation:
    engine = make_engine(db_url)
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            now = datetime.now(UTC)
            opened = await allocations.open_allocation(
                session, task_id, slots=1, resource_pool="default", now=now
            )
            if preempt:
                # Only a running allocation is asked to stop gracefully (else it is killed).
                alloc = await session.get(Allocation, opened.allocation_id)
                assert alloc is not None
                history.move_allocation(session, alloc, AllocationState.RUNNING, now)
                await allocations.request_preemption(
                    session, opened.allocation_id, reason="test asks for it", now=now
                )
            return opened
    finally:
        await engine.dispose()


PREEMPT_SCRIPT = r"""
import json, os, sys, time
import determined as det
from determined import core, _info
info = det.ClusterInfo._from_env(); info._trial_info = det.TrialInfo._from_env()
info._rendezvous_info = det.RendezvousInfo(["127.0.0.1"], 0, [1])
info._resources_info = det.ResourcesInfo([])
_info._info = info
with core.init(tensorboard_mode=core.TensorboardMode.MANUAL) as ctx:
    ctx.train.set_status("training")
    ctx.train.report_training_metrics(steps_completed=4, metrics={"loss": float("nan")})
    ctx.train.report_validation_metrics(steps_completed=4, metrics={"loss": 0.25})
    ctx.train.report_progress(0.4)
    with ctx.checkpoint.store_path({"steps_completed": 4}) as (path, uuid):
        (path / "w.txt").write_text("weights")
    meta = ctx.checkpoint.get_metadata(uuid)
    print("READY " + json.dumps({"uuid": uuid, "meta": meta}), flush=True)
    deadline = time.monotonic() + 90
    while not ctx.preempt.should_preempt():
        if time.monotonic() > deadline:
            sys.exit("never preempted")
        time.sleep(0.1)
    best = ctx.train.get_experiment_best_validation()
    print("PREEMPTED " + json.dumps({"best": best}), flush=True)
"""


async def test_a_paused_experiment_preempts_the_real_core_api_and_requeues(
    det_bin: Path, running_master: RunningMaster, tmp_path: Path
) -> None:
    """A fake agent holds the allocation; the real Core API runs as its task's process."""
    from tests.support.fake_agent import FakeAgent
    from tests.support.live_master import eventually

    api = _api(running_master)
    config = (
        "name: l2-preempt\nentrypoint: python3 train.py\n"
        "searcher: {name: single, metric: loss, max_length: 10}\n"
        f"checkpoint_storage: {{type: shared_fs, host_path: {tmp_path / 'ckpt'}}}\n"
        "max_restarts: 0\n"
    )
    ws_url = running_master.url.replace("http://", "ws://")
    agent = await FakeAgent(ws_url, "compat-agent", 1).connect()
    try:
        r = api.post("/api/v1/experiments", json={"config": config, "activate": True})
        assert r.status_code == 200, r.text
        exp = r.json()["experiment"]

        async def started() -> bool:
            return bool(agent.started)

        await eventually(started, timeout=30)
        ((cid, start),) = agent.started.items()
        env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
        env.update(start.spec.environment)
        env.update(
            DET_MASTER=running_master.url,
            DET_CLUSTER_ID="c",
            DET_AGENT_ID="compat-agent",
            DET_SLOT_IDS="[0]",
            DET_USER="admin",
        )
        proc = await asyncio.create_subprocess_exec(
            str(det_bin / "python"),
            "-c",
            PREEMPT_SCRIPT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 120)
        assert line.startswith(b"READY "), line + (await proc.stderr.read() if proc.stderr else b"")
        ready = json.loads(line[len(b"READY ") :])
        assert ready["meta"]["steps_completed"] == 4

        assert api.post(f"/api/v1/experiments/{exp['id']}/pause").status_code == 200
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, (out + err).decode(errors="replace")[-3000:]
        assert json.loads(out.split(b"PREEMPTED ", 1)[1])["best"] == pytest.approx(0.25)
        await agent.exit(cid, 0)  # the container ends after the acknowledged preemption

        trial_path = f"/api/v1/experiments/{exp['id']}/trials"

        async def paused() -> bool:
            return api.get(trial_path).json()["trials"][0]["state"] == "STATE_PAUSED"

        await eventually(paused, timeout=20)
        trial = api.get(trial_path).json()["trials"][0]
        assert trial["restarts"] == 0 and trial["runnerState"] == "training"
        workloads = api.get(f"/api/v1/trials/{trial['id']}/workloads").json()["workloads"]
        training = [w["training"] for w in workloads if "training" in w]
        assert training[0]["metrics"]["avgMetrics"] == {"loss": "NaN"}
        assert api.post(f"/api/v1/experiments/{exp['id']}/activate").status_code == 200

        async def requeued() -> bool:
            return len(agent.started) == 2

        await eventually(requeued, timeout=20)
        assert api.get(trial_path).json()["trials"][0]["state"] == "STATE_ACTIVE"
    finally:
        await agent.close()


def _api(master: RunningMaster) -> httpx.Client:
    r = httpx.post(
        f"{master.url}/api/v1/auth/login",
        json={"username": "admin", "password": client_hash(PASSWORD), "isHashed": True},
    )
    r.raise_for_status()
    return httpx.Client(
        base_url=master.url, headers={"Authorization": f"Bearer {r.json()['token']}"}
    )


def test_core_api_reports_metrics_checkpoints_and_preemption(
    det_bin: Path, running_master: RunningMaster, tmp_path: Path
) -> None:
    api = _api(running_master)
    config = (
        "name: l2\nentrypoint: python3 train.py\n"
        "searcher: {name: single, metric: loss, max_length: 10}\n"
        f"checkpoint_storage: {{type: shared_fs, host_path: {tmp_path / 'ckpt'}}}\n"
    )
    r = api.post("/api/v1/experiments", json={"config": config, "activate": True})
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]
    trial = api.get(f"/api/v1/experiments/{exp['id']}/trials").json()["trials"][0]
    opened = asyncio.run(_open_allocation(running_master.db_url, trial["taskId"], preempt=True))

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
        "DET_MASTER": running_master.url,
        "DET_CLUSTER_ID": "c",
        "DET_AGENT_ID": "agent-1",
        "DET_SLOT_IDS": "[0]",
        "DET_TASK_ID": trial["taskId"],
        "DET_ALLOCATION_ID": opened.allocation_id,
        "DET_SESSION_TOKEN": opened.token,
        "DET_TASK_TYPE": "TRIAL",
        "DET_USER": "admin",
        "DET_TRIAL_ID": str(trial["id"]),
        "DET_EXPERIMENT_ID": str(exp["id"]),
        "DET_TRIAL_SEED": "0",
        "DET_HPARAMS": "{}",
        "DET_STEPS_COMPLETED": "0",
        "DET_TRIAL_RUN_ID": "1",
        "DET_EXPERIMENT_CONFIG": json.dumps(exp["config"]),
        "CKPT_DIR": str(tmp_path / "ckpt"),
    }
    proc = subprocess.run(
        [str(det_bin / "python"), "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(re.search(r"^RESULT (.*)$", proc.stdout, re.M).group(1))  # type: ignore[union-attr]
    # Reports ship in the background, so the in-run answer may predate the validation.
    assert result["best"] in (None, pytest.approx(0.05))
    path = f"/api/v1/experiments/{exp['id']}/searcher/best_searcher_validation_metric"
    assert api.get(path).json()["metric"] == pytest.approx(0.05)
    assert result["meta"]["steps_completed"] == 10
    assert result["preempt"] is True

    workloads = api.get(f"/api/v1/trials/{trial['id']}/workloads").json()["workloads"]
    kinds = [next(iter(w)) for w in workloads]
    assert kinds.count("training") == 2 and "validation" in kinds and "checkpoint" in kinds
    ckpt = api.get(f"/api/v1/checkpoints/{result['uuid']}").json()["checkpoint"]
    assert ckpt["resources"]["w.txt"] == "7" and ckpt["training"]["trialId"] == trial["id"]
    assert api.get(f"/api/v1/trials/{trial['id']}").json()["trial"]["runnerState"] == "training"

    # ship_logs' shape, with the task's own token; then the real CLI reads them back.
    line = {
        "task_id": trial["taskId"],
        "allocation_id": opened.allocation_id,
        "log": "epoch 1\n",
        "timestamp": "2026-01-01T00:00:00Z",
        "stdtype": "stdout",
        "source": "task",
        "level": "LOG_LEVEL_INFO",
        "agent_id": "agent-1",
        "container_id": "c1",
        "rank_id": 0,
    }
    r = httpx.post(
        f"{running_master.url}/api/v1/task/logs",
        json={"logs": [line]},
        headers={"Grpc-Metadata-x-allocation-token": f"Bearer {opened.token}"},
    )
    assert r.status_code == 200, r.text
    cli_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
        "DET_MASTER": running_master.url,
        "DET_DEBUG_CONFIG_PATH": str(tmp_path / "cfg"),
        "DET_USER": "admin",
        "DET_PASS": PASSWORD,
    }
    for args, expect in (
        (["trial", "logs", str(trial["id"])], "epoch 1"),
        (["trial", "describe", str(trial["id"])], "0.05"),
        (["checkpoint", "describe", result["uuid"]], result["uuid"]),
        (["experiment", "list-checkpoints", str(exp["id"])], result["uuid"]),
    ):
        out = subprocess.run(
            [str(det_bin / "det"), *args], env=cli_env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0 and expect in out.stdout, out.stdout + out.stderr


def test_task_token_cannot_write_another_trial(
    running_master: RunningMaster, det_bin: Path
) -> None:
    api = _api(running_master)
    config = "name: iso\nentrypoint: x\nsearcher: {name: random, metric: loss, max_trials: 2}\n"
    exp = api.post("/api/v1/experiments", json={"config": config}).json()["experiment"]
    t1, t2 = api.get(f"/api/v1/experiments/{exp['id']}/trials").json()["trials"]
    opened = asyncio.run(_open_allocation(running_master.db_url, t1["taskId"], preempt=False))
    body = {
        "group": "training",
        "metrics": {"trialRunId": 1, "stepsCompleted": 1, "metrics": {"avgMetrics": {"loss": 1}}},
    }
    headers = {"Grpc-Metadata-x-allocation-token": f"Bearer {opened.token}"}
    ok = httpx.post(
        f"{running_master.url}/api/v1/trials/{t1['id']}/metrics", json=body, headers=headers
    )
    bad = httpx.post(
        f"{running_master.url}/api/v1/trials/{t2['id']}/metrics", json=body, headers=headers
    )
    assert ok.status_code == 200 and bad.status_code == 403
