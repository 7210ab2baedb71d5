"""Submissions to a pool with no room wait for its tick (services/scheduling/arrivals.py): a
live master with a fake agent of one slot, the tick set to a minute so that only pokes run
passes while a test looks."""

from __future__ import annotations

import asyncio
from typing import Any

from controlplane.services.scheduling.pools import PassResult
from tests.controlplane.services.scheduling.conftest import StartMaster, add_agent
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually

ONE_SLOT = {"entrypoint": ["true"], "resources": {"slots": 1}}
NO_SLOT = {"entrypoint": ["true"], "resources": {"slots": 0}}
QUIET_S = 0.5  # long enough for a poked pass to have run (a pass here takes milliseconds)


async def _launch(m: LiveMaster, config: dict[str, Any]) -> str:
    return (await m.post("/api/v1/commands", {"config": config}))["command"]["id"]


async def _started(agent: FakeAgent, n: int) -> None:
    async def check() -> bool:
        return len(agent.started) == n

    await eventually(check, timeout=10)


async def _one_slot_pool_running_one(
    start_master: StartMaster, agents: list[FakeAgent]
) -> tuple[LiveMaster, FakeAgent, list[PassResult]]:
    m = await start_master(scheduling_interval_s=60)
    agent = await add_agent(m, agents, "a1", 1)
    passes: list[PassResult] = []
    m.scheduling.pass_listeners.append(passes.append)
    await _launch(m, ONE_SLOT)  # the slot is idle: a pass at once starts it
    await _started(agent, 1)
    await asyncio.sleep(QUIET_S)
    return m, agent, passes


async def test_arrivals_at_a_full_pool_run_no_pass_until_a_slot_frees(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m, agent, passes = await _one_slot_pool_running_one(start_master, agents)
    before = len(passes)
    for _ in range(5):
        await _launch(m, ONE_SLOT)
    await asyncio.sleep(QUIET_S)
    assert len(passes) == before, "a pass ran for tasks that could not start"

    # The running task ends: its end wakes the pool, which starts the first one waiting.
    (first,) = agent.started
    await agent.exit(first)
    await _started(agent, 2)
    assert len(passes) > before


async def test_a_task_of_zero_slots_gets_its_pass_at_once(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m, agent, _ = await _one_slot_pool_running_one(start_master, agents)
    await _launch(m, NO_SLOT)  # aux capacity is counted apart from slots
    await _started(agent, 2)


async def test_the_next_tick_sees_the_arrivals(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    """Nothing waits longer than the tick: its pass lists the waiting tasks, so the job queue
    and a provisioner (which reads demand off each pass) learn of them within it."""
    m = await start_master(scheduling_interval_s=0.2)
    agent = await add_agent(m, agents, "a1", 1)
    passes: list[PassResult] = []
    m.scheduling.pass_listeners.append(passes.append)
    await _launch(m, ONE_SLOT)
    await _started(agent, 1)
    waiting = {await _launch(m, ONE_SLOT) for _ in range(3)}

    async def seen() -> bool:
        return bool(passes) and {r.allocation_id for r in passes[-1].snapshot.pending} == waiting

    await eventually(seen, timeout=2)


async def test_the_job_queue_lists_a_task_the_moment_its_submission_answered(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    """Its pass may wait for the tick, but whoever reads the queue (`det job list`, the pools'
    counts) gets a pass first: no waiting task is missing from what they show."""
    m, _, _ = await _one_slot_pool_running_one(start_master, agents)
    waiting = [await _launch(m, ONE_SLOT) for _ in range(3)]
    jobs = [j["full"] for j in (await m.get("/api/v1/job-queues-v2"))["jobs"]]
    assert {j["entityId"] for j in jobs if j["summary"]["state"] == "STATE_QUEUED"} == set(waiting)
    (pool,) = (await m.get("/api/v1/resource-pools"))["resourcePools"]
    assert pool["stats"]["queuedCount"] == 3


async def test_a_pass_that_fails_before_a_read_leaves_the_last_one_to_show(
    start_master: StartMaster, agents: list[FakeAgent], monkeypatch: Any
) -> None:
    """A database blip during that pass must not fail `det resource-pool list`."""
    m, _, _ = await _one_slot_pool_running_one(start_master, agents)
    await _launch(m, ONE_SLOT)

    async def blip(pool: str) -> None:
        raise ConnectionResetError("the database went away")

    monkeypatch.setattr(m.scheduling, "run_pass", blip)
    (pool,) = (await m.get("/api/v1/resource-pools"))["resourcePools"]  # 200, not a 500
    assert pool["name"] == "default" and pool["stats"]["queuedCount"] == 0  # the last pass's
