"""A pool keeps its queue between passes (services/scheduling/pools.py): a pass that only a
command's end asked for plans on the queue the last pass read, and anything else that may
change the queue has the next pass read it again. A live master with a fake agent of one slot,
the tick set to a minute so that only pokes run passes while a test looks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controlplane.services.scheduling import pools
from tests.controlplane.services.scheduling.conftest import StartMaster, add_agent
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually

ONE_SLOT = {"entrypoint": ["true"], "resources": {"slots": 1}}


async def _launch(m: LiveMaster, config: dict[str, Any] = ONE_SLOT) -> str:
    return (await m.post("/api/v1/commands", {"config": config}))["command"]["id"]


async def _started(agent: FakeAgent, n: int) -> list[str]:
    async def check() -> bool:
        return len(agent.started) == n

    await eventually(check, timeout=10)
    return list(agent.started)  # container ids, in the order they were started


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per pass: True when it read the queue from the database."""
    reads: list[bool] = []
    real = pools.load_pool_rows

    async def counted(session: Any, pool: str, queue: Any = None) -> Any:
        reads.append(queue is None)
        return await real(session, pool, queue)

    monkeypatch.setattr(pools, "load_pool_rows", counted)
    return reads


async def test_a_commands_end_plans_on_the_kept_queue_and_a_kill_reads_it_again(
    start_master: StartMaster, agents: list[FakeAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    m = await start_master(scheduling_interval_s=60)
    agent = await add_agent(m, agents, "a1", 1)
    first = await _launch(m)
    await _started(agent, 1)
    waiting = [await _launch(m) for _ in range(3)]
    reads = _count_reads(monkeypatch)

    # The first end after the arrivals reads the queue (they changed it), the next one not.
    await agent.exit((await _started(agent, 1))[0])
    await agent.exit((await _started(agent, 2))[1])
    started = await _started(agent, 3)
    assert reads == [True, False]
    tasks = [agent.started[c].spec.task_id for c in started]
    assert tasks == [first, *waiting[:2]]  # the kept queue keeps its order

    # A kill of the last one waiting changes the queue: the pass it asks for reads it.
    await m.post(f"/api/v1/commands/{waiting[2]}/kill")
    await asyncio.sleep(0.3)
    assert reads[2:] and reads[2] is True
    await agent.exit(started[2])
    await asyncio.sleep(0.5)
    assert len(agent.started) == 3, "a killed command was started from a kept queue"


async def test_a_task_gone_from_the_kept_queue_unannounced_is_not_started(
    start_master: StartMaster, agents: list[FakeAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept queue can be behind the database: what a pass starts is checked again."""
    m = await start_master(scheduling_interval_s=60)
    agent = await add_agent(m, agents, "a1", 1)
    await _launch(m)
    await _started(agent, 1)
    waiting = [await _launch(m) for _ in range(2)]
    await agent.exit((await _started(agent, 1))[0])
    started = await _started(agent, 2)  # this pass read the queue: waiting[1] is kept
    monkeypatch.setattr(m.scheduling, "poke", lambda *a, **kw: None)  # the kill goes unannounced
    await m.post(f"/api/v1/commands/{waiting[1]}/kill")
    monkeypatch.undo()
    reads = _count_reads(monkeypatch)
    await agent.exit(started[1])

    async def planned_on_the_kept_queue() -> bool:
        return bool(reads)

    await eventually(planned_on_the_kept_queue, timeout=5)
    await asyncio.sleep(0.3)
    assert reads[0] is False and len(agent.started) == 2
