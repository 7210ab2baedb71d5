"""A trivial command's whole life costs the master a bounded number of SQL statements and
transactions, counted on a live master (real HTTP and agent WebSocket) on both databases.

The life: POST /api/v1/commands, the pass that places it, RUNNING from the agent, the launcher's
GET of the context directory, the exit, and the pass that follows. The trivial task throughput
benchmark is bounded by the master's CPU per task, most of which is spent per statement; the
budgets hold what was reached and leave a little room.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster, eventually

pytestmark = pytest.mark.slow

COMMANDS = 4
# 26 since a submission reads its workspace's config policies (docs/config-policies.md); 25
# before, 27 before a command's end went on Core's path, 40 in c527c30
STATEMENTS_PER_COMMAND = 26
TRANSACTIONS_PER_COMMAND = 7  # 8 before


@dataclass
class Tally:
    statements: int = 0
    transactions: int = 0


@contextmanager
def counting(engine: Engine) -> Iterator[Tally]:
    tally = Tally()

    def statement(*_: Any) -> None:
        tally.statements += 1

    def begin(*_: Any) -> None:
        tally.transactions += 1

    event.listen(engine, "before_cursor_execute", statement)
    event.listen(engine, "begin", begin)
    try:
        yield tally
    finally:
        event.remove(engine, "before_cursor_execute", statement)
        event.remove(engine, "begin", begin)


async def settled(m: LiveMaster) -> None:
    """No scheduling pass runs or is due (passes run only when poked in these tests)."""
    runner = m.scheduling.pools["default"]

    async def idle() -> bool:
        return not runner.wake.is_set() and not runner.lock.locked()

    await eventually(idle)
    await asyncio.sleep(0.05)
    await eventually(idle)


async def one_life(m: LiveMaster, agent: FakeAgent, engine: Engine) -> Tally:
    body = {"config": {"entrypoint": ["true"], "resources": {"slots": 1}}}
    with counting(engine) as tally:
        task_id = (await m.post("/api/v1/commands", body))["command"]["id"]

        async def started() -> Any:
            return next((s for s in agent.started.values() if s.spec.task_id == task_id), None)

        start = await eventually(started)
        await eventually(lambda: _true(start.container.id in agent.running))
        token = start.spec.environment["DET_SESSION_TOKEN"]
        r = await m.http.get(
            f"/api/v1/tasks/{task_id}/context_directory",
            headers={"Grpc-Metadata-x-allocation-token": f"Bearer {token}"},
        )
        assert r.status_code == 200, r.text
        await asyncio.sleep(0.1)  # RUNNING is recorded
        await agent.exit(start.container.id, 0)
        await eventually(lambda: _true(start.spec.allocation_id not in agent.allocations()))
        await asyncio.sleep(0.2)  # TERMINATED is recorded and pokes the pool
        await settled(m)
    command = (await m.get(f"/api/v1/commands/{task_id}"))["command"]
    assert command["state"] == "STATE_TERMINATED", command
    return tally


async def _true(value: bool) -> bool:
    return value


async def test_a_command_life_stays_within_its_statement_budget(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    # Passes run only when something pokes the pool, so the count is the command's own.
    m = await start_master(scheduling_interval_s=60.0)
    agent = FakeAgent(m.ws_url, "budget-agent", 1)
    agents.append(agent)
    await agent.connect()
    await settled(m)
    engine = m.app.state["api"].sessionmaker.kw["bind"].sync_engine
    await one_life(m, agent, engine)  # warm-up: first-use queries and caches
    lives = [await one_life(m, agent, engine) for _ in range(COMMANDS)]
    statements = max(t.statements for t in lives)
    transactions = max(t.transactions for t in lives)
    assert statements <= STATEMENTS_PER_COMMAND, [t.statements for t in lives]
    assert transactions <= TRANSACTIONS_PER_COMMAND, [t.transactions for t in lives]
