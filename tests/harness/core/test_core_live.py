"""The harness Core API as a task of a live master (a fake agent holds the allocation).

What the wire must do: NaN/inf reach the store (not a 500), a retried report is stored once, a
report over the master's body limit is an error on the next call naming the limit, the best
validation is seen, and a pause reaches ``should_preempt()``, is acknowledged, and the trial is
paused and re-queued rather than errored.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

import harness as det
from harness._session import APIError
from tests.harness.live import place_trial, task_env
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster, eventually

pytestmark = pytest.mark.slow

CONFIG = """
name: core-live
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: 10, smaller_is_better: true}
checkpoint_storage: {type: shared_fs, host_path: HOST}
resources: {slots_per_trial: 1}
max_restarts: 0
"""


def _env_for_this_process(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("DET_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("DET_"):
            monkeypatch.setenv(key, value)


def _report(ctx: det.core.Context) -> dict[str, Any]:
    ctx.train.set_status("training")
    ctx.train.report_training_metrics(5, {"loss": float("nan"), "grad": float("inf")})
    ctx.train.report_training_metrics(5, {"loss": float("nan"), "grad": float("inf")})  # a retry
    ctx.train.report_metrics("custom", 5, {"x": -math.inf})
    ctx.train.report_validation_metrics(5, {"loss": 0.5})
    ctx.train.report_progress(0.5)
    with pytest.raises(TypeError, match="'bad'"):
        ctx.train.report_training_metrics(6, {"bad": object()})
    best = ctx.train.get_experiment_best_validation()
    ctx.train.report_training_metrics(7, {"blob": "x" * 8000})  # over the 4 KiB master limit
    with pytest.raises(APIError, match="max_request_body_bytes"):
        ctx.train.get_experiment_best_validation()  # waits for the reports in flight
    ctx.train.set_status("after the big one")
    return {"best": best}


def _wait_for_preemption(ctx: det.core.Context) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if ctx.preempt.should_preempt():
            return True
        time.sleep(0.05)
    return False


async def _trial(m: LiveMaster, exp_id: int) -> dict[str, Any]:
    return (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"][0]


async def test_metrics_preemption_and_requeue(
    start_master: StartMaster,
    agents: list[FakeAgent],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = await start_master(http={"max_request_body_bytes": 4096})
    config = CONFIG.replace("HOST", str(tmp_path / "ckpt"))
    exp, start, agent = await place_trial(m, agents, config, {"train.py": b"pass\n"})
    env = task_env(m, start, tmp_path / "work")
    _env_for_this_process(env, monkeypatch)

    # Everything blocking runs off the event loop the live master serves from.
    ctx = await asyncio.to_thread(det.core.init, tensorboard_mode=det.core.TensorboardMode.MANUAL)
    ctx.start()
    try:
        result = await asyncio.to_thread(_report, ctx)
        assert result["best"] == 0.5
        await m.post(f"/api/v1/experiments/{exp['id']}/pause")
        assert await asyncio.to_thread(_wait_for_preemption, ctx)
    finally:
        await asyncio.to_thread(ctx.close)

    trial = await _trial(m, exp["id"])
    workloads = (await m.get(f"/api/v1/trials/{trial['id']}/workloads"))["workloads"]
    training = [w["training"] for w in workloads if "training" in w]
    assert len(training) == 1  # the retried report was stored once; the big one never was
    assert training[0]["metrics"]["avgMetrics"] == {"loss": "NaN", "grad": "Infinity"}
    assert trial["runnerState"] == "after the big one"

    # The task exits 0 after its acknowledged preemption: paused, not completed or errored.
    await agent.exit(next(iter(agent.started)), 0)

    async def paused() -> bool:
        t = await _trial(m, exp["id"])
        return t["state"] == "STATE_PAUSED"

    await eventually(paused, timeout=10)
    await m.post(f"/api/v1/experiments/{exp['id']}/activate")

    async def requeued() -> bool:
        return len(agent.started) == 2

    await eventually(requeued, timeout=10)
    t = await _trial(m, exp["id"])
    assert t["state"] == "STATE_ACTIVE" and t["restarts"] == 0
