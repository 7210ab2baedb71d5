"""Preemption end to end: the scheduler's decision becomes the allocation's preemption signal;
an acknowledged preemption frees the slots and re-queues the trial without using a restart."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest

from controlplane.api.tasks import LONG_POLL_STEP_S
from controlplane.services import allocations
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    experiment_yaml,
    submit,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually

PREEMPTIVE = {"resource_manager": {"scheduler": {"type": "priority", "preemption": True}}}


async def _task_headers(agent: FakeAgent, allocation_id: str) -> dict[str, str]:
    for start in agent.started.values():
        if start.spec.allocation_id == allocation_id:
            token = start.spec.environment["DET_SESSION_TOKEN"]
            return {"Grpc-Metadata-x-allocation-token": f"Bearer {token}"}
    raise AssertionError(f"{allocation_id} was never started")


async def _trial(m: LiveMaster, exp_id: int) -> dict[str, Any]:
    return (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"][0]


async def test_high_priority_job_preempts_and_low_one_requeues(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**PREEMPTIVE)
    agent = await add_agent(m, agents, "a1", 2)
    low = (await submit(m, experiment_yaml("low", slots=2, priority=50)))["experiment"]

    async def one_running() -> set[str]:
        return agent.allocations()

    (low_alloc,) = await eventually(one_running, timeout=5)
    high = (await submit(m, experiment_yaml("high", slots=2, priority=10)))["experiment"]

    headers = await _task_headers(agent, low_alloc)
    r = await m.http.get(
        f"/api/v1/allocations/{low_alloc}/signals/preemption",
        params={"timeoutSeconds": 10},
        headers=headers,
    )
    assert r.status_code == 200 and r.json()["preempt"] is True
    # The high-priority trial waits for the slots until the low one lets go.
    assert len(agent.started) == 1
    r = await m.http.post(
        f"/api/v1/allocations/{low_alloc}/signals/ack_preemption", headers=headers
    )
    assert r.status_code == 200
    low_cid = next(c for c, s in agent.started.items() if s.spec.allocation_id == low_alloc)
    await agent.exit(low_cid, 0)

    async def high_started() -> bool:
        return any(s.spec.allocation_id not in {low_alloc} for s in agent.started.values())

    await eventually(high_started, timeout=5)
    (high_start,) = [s for s in agent.started.values() if s.spec.allocation_id != low_alloc]
    high_trial = await _trial(m, high["id"])
    assert high_start.spec.task_id.startswith(f"{high['id']}.")
    assert high_trial["state"] == "STATE_ACTIVE"
    low_trial = await _trial(m, low["id"])
    assert low_trial["state"] == "STATE_ACTIVE" and low_trial["restarts"] == 0

    # Once the important job ends, the preempted trial gets the slots back.
    await agent.exit(next(c for c, s in agent.started.items() if s is high_start), 0)

    async def low_again() -> bool:
        allocs = {s.spec.allocation_id for s in agent.started.values()}
        return len(allocs) == 3

    await eventually(low_again, timeout=5)
    restarted = [s for s in agent.started.values() if s.spec.task_id == low_trial["taskId"]]
    assert len(restarted) == 2 and restarted[1].spec.allocation_id.endswith(".2")


async def test_without_preemption_the_running_job_keeps_its_slots(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 2)
    await submit(m, experiment_yaml("low", slots=2, priority=50))

    async def one_running() -> set[str]:
        return agent.allocations()

    (low_alloc,) = await eventually(one_running, timeout=5)
    await submit(m, experiment_yaml("high", slots=2, priority=10))
    headers = await _task_headers(agent, low_alloc)
    r = await m.http.get(
        f"/api/v1/allocations/{low_alloc}/signals/preemption",
        params={"timeoutSeconds": 1},
        headers=headers,
    )
    assert r.json()["preempt"] is False
    assert len(agent.started) == 1


async def test_pause_preempts_and_kill_sends_sigkill(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    exp = (await submit(m, experiment_yaml("e", slots=1)))["experiment"]

    async def running() -> set[str]:
        return agent.allocations()

    (alloc,) = await eventually(running, timeout=5)
    await m.post(f"/api/v1/experiments/{exp['id']}/pause")
    headers = await _task_headers(agent, alloc)
    r = await m.http.get(
        f"/api/v1/allocations/{alloc}/signals/preemption",
        params={"timeoutSeconds": 5},
        headers=headers,
    )
    assert r.json()["preempt"] is True
    await agent.exit(next(iter(agent.started)), 0)

    async def paused_and_free() -> bool:
        t = await _trial(m, exp["id"])
        a = (await m.get("/api/v1/agents/a1"))["agent"]
        return t["state"] == "STATE_PAUSED" and not a["containers"]

    await eventually(paused_and_free, timeout=5)
    await m.post(f"/api/v1/experiments/{exp['id']}/activate")
    (alloc2,) = await eventually(running, timeout=5)
    assert alloc2 != alloc

    await m.post(f"/api/v1/experiments/{exp['id']}/kill")

    async def killed() -> bool:
        e = (await m.get(f"/api/v1/experiments/{exp['id']}"))["experiment"]
        return e["state"] == "STATE_CANCELED"

    await eventually(killed, timeout=5)
    assert [s.signal for s in agent.signals] == ["SIGKILL"]


async def test_a_watcher_whose_client_hangs_up_stops_polling(
    start_master: StartMaster, agents: list[FakeAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    await submit(m, experiment_yaml("e", slots=1))

    async def running() -> set[str]:
        return agent.allocations()

    (alloc,) = await eventually(running, timeout=5)
    headers = await _task_headers(agent, alloc)
    polls = 0
    real = allocations.should_preempt

    async def counted(*args: Any, **kwargs: Any) -> bool:
        nonlocal polls
        polls += 1
        return await real(*args, **kwargs)

    monkeypatch.setattr(allocations, "should_preempt", counted)
    async with httpx.AsyncClient(base_url=m.url, headers=headers, timeout=120) as client:
        watcher = asyncio.create_task(
            client.get(f"/api/v1/allocations/{alloc}/signals/preemption?timeoutSeconds=600")
        )

        async def polling() -> bool:
            return polls >= 2

        await eventually(polling, timeout=5)
        watcher.cancel()  # the task's process went away mid-poll
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    await asyncio.sleep(3 * LONG_POLL_STEP_S)
    after_hangup = polls
    await asyncio.sleep(4 * LONG_POLL_STEP_S)
    assert polls == after_hangup, "the master kept polling for a client that hung up"
