"""examples/hello: a valid experiment, a trial that trains off a cluster, and on one through the
launcher against a live master: metrics, checkpoints, preemption and resumption."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.schemas.expconf import load_yaml_mapping, validate_experiment_config
from tests.harness.live import REPO, place_trial, run_launcher, task_env, task_logs
from tests.harness.test_launch import launcher_env
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster, eventually

HELLO = REPO / "examples" / "hello"
CONST = (HELLO / "const.yaml").read_text()
CONTEXT = {p.name: p.read_bytes() for p in sorted(HELLO.iterdir()) if p.is_file()}


def test_const_yaml_is_a_valid_experiment() -> None:
    data, lines = load_yaml_mapping(CONST)
    cfg = validate_experiment_config(data, lines)
    assert cfg.entrypoint == "python3 train.py"
    assert cfg.searcher is not None


def _run_off_cluster(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "train.py", *args],
        cwd=HELLO,
        env=launcher_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout + proc.stderr


def _training_loss(output: str, step: int) -> str:
    m = re.search(rf"training metrics at step {step}: (\{{.*\}})", output)
    assert m, output[-2000:]
    return m.group(1)


@pytest.mark.slow  # two torch start-ups
def test_off_cluster_trains_checkpoints_and_resumes_exactly(tmp_path: Path) -> None:
    out = _run_off_cluster("--max-length", "60", "--checkpoint-dir", str(tmp_path))
    assert "validation metrics at step 60" in out
    steps = {
        json.loads((d / "metadata.json").read_text())["steps_completed"]: d.name
        for d in tmp_path.iterdir()
    }
    assert sorted(steps) == [50, 60]  # every 50 batches, and at the end
    resumed = _run_off_cluster(
        "--max-length", "60", "--checkpoint-dir", str(tmp_path), "--resume", steps[50]
    )
    assert f"resumed from checkpoint {steps[50]} at step 50" in resumed
    assert "training metrics at step 10:" not in resumed
    # Batches depend only on the step: the resumed run ends exactly where the first one did.
    assert _training_loss(resumed, 60) == _training_loss(out, 60)


async def _workloads(m: LiveMaster, trial_id: int) -> list[dict[str, Any]]:
    return (await m.get(f"/api/v1/trials/{trial_id}/workloads", params={"limit": -1}))["workloads"]


async def _trial_of(m: LiveMaster, exp_id: int) -> dict[str, Any]:
    return (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"][0]


@pytest.mark.slow
async def test_on_cluster_run_to_completion(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    m = await start_master()
    exp, start, agent = await place_trial(m, agents, CONST, CONTEXT)
    ran = await run_launcher(list(start.spec.argv), task_env(m, start, tmp_path / "w"))
    assert ran.returncode == 0, ran.stderr.decode(errors="replace")[-3000:]
    trial = await _trial_of(m, exp["id"])
    work = await _workloads(m, trial["id"])
    training = [w["training"]["totalBatches"] for w in work if w.get("training")]
    validation = [w["validation"] for w in work if w.get("validation")]
    checkpoints = [w["checkpoint"] for w in work if w.get("checkpoint")]
    assert training == list(range(10, 101, 10))
    assert [v["totalBatches"] for v in validation] == [100]
    assert validation[0]["metrics"]["avgMetrics"]["loss"] < 0.1
    assert [c["totalBatches"] for c in checkpoints] == [50, 100]
    assert all("state.pt" in c["resources"] for c in checkpoints)
    # The container exits 0 without a preemption: the trial and the experiment complete.
    await agent.exit(start.container.id, 0)

    async def completed() -> bool:
        e = (await m.get(f"/api/v1/experiments/{exp['id']}"))["experiment"]
        return e["state"] == "STATE_COMPLETED"

    await eventually(completed, timeout=30)


async def _run_until_preempted(
    m: LiveMaster, exp_id: int, start: Any, workdir: Path
) -> tuple[int, int]:
    """Run the trial, pause the experiment once it reports; returns (exit code, last step)."""
    run = asyncio.create_task(run_launcher(list(start.spec.argv), task_env(m, start, workdir)))
    trial_id = (await _trial_of(m, exp_id))["id"]
    first_report = 10 + int(start.spec.environment["DET_STEPS_COMPLETED"])

    async def reported() -> bool:
        assert not run.done(), (await run).stderr.decode(errors="replace")[-3000:]
        work = await _workloads(m, trial_id)
        return any(w.get("training", {}).get("totalBatches", 0) >= first_report for w in work)

    await eventually(reported, timeout=60, interval=0.2)
    await m.post(f"/api/v1/experiments/{exp_id}/pause")
    ran = await run
    work = await _workloads(m, trial_id)
    last = max(w["checkpoint"]["totalBatches"] for w in work if w.get("checkpoint"))
    return ran.returncode, last


@pytest.mark.slow
async def test_preempted_trial_checkpoints_exits_0_and_resumes_where_it_stopped(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    m = await start_master()
    config = CONST.replace("batches: 100", "batches: 100000")
    exp, start, agent = await place_trial(m, agents, config, CONTEXT)

    code, stopped_at = await _run_until_preempted(m, exp["id"], start, tmp_path / "run1")
    assert code == 0 and 0 < stopped_at < 100000
    assert stopped_at % 10 == 0  # it checks for preemption every 10 batches
    await agent.exit(start.container.id, 0)

    async def paused() -> bool:
        e = (await m.get(f"/api/v1/experiments/{exp['id']}"))["experiment"]
        return e["state"] == "STATE_PAUSED"

    await eventually(paused, timeout=10)
    await m.post(f"/api/v1/experiments/{exp['id']}/activate")

    async def restarted() -> bool:
        return len(agent.started) == 2

    await eventually(restarted, timeout=10)
    again = list(agent.started.values())[1]
    assert again.spec.environment["DET_STEPS_COMPLETED"] == str(stopped_at)
    assert again.spec.environment["DET_TRIAL_RUN_ID"] == "2"
    code, stopped_again = await _run_until_preempted(m, exp["id"], again, tmp_path / "run2")
    assert code == 0 and stopped_again > stopped_at
    logs = await task_logs(m, start.spec.task_id)
    latest = again.spec.environment["DET_LATEST_CHECKPOINT"]
    assert any(f"resumed from checkpoint {latest} at step {stopped_at}" in e["log"] for e in logs)
