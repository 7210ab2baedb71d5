"""The scheduling loop survives a database that blips, and a master that restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from controlplane.services.scheduling import pools
from tests.conftest import PASSWORD, make_settings
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    experiment_yaml,
    submit,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually, live_master


async def test_a_failing_pass_is_retried(
    start_master: StartMaster, agents: list[FakeAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pools.load_pool_rows
    failures = {"left": 3}

    async def flaky(session: Any, pool: str, queue: Any = None) -> Any:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise OperationalError("SELECT", {}, Exception("connection reset"))
        return await real(session, pool, queue)

    monkeypatch.setattr(pools, "load_pool_rows", flaky)
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    await submit(m, experiment_yaml())

    async def placed() -> bool:
        return len(agent.started) == 1

    await eventually(placed, timeout=10)
    assert failures["left"] == 0


async def test_restarted_master_keeps_running_allocations_counted(
    start_master: StartMaster, agents: list[FakeAgent], db_url: str, tmp_path: Path
) -> None:
    async with live_master(make_settings(db_url, tmp_path), PASSWORD) as m:
        agent = await add_agent(m, agents, "a1", 1)
        await submit(m, experiment_yaml("a"))

        async def placed() -> set[str]:
            return agent.allocations()

        (alloc,) = await eventually(placed, timeout=5)
        await agent.close()
    # The master restarts on the same database: the allocation survives and holds its slot.
    m2 = await start_master()
    back = await add_agent(m2, agents, "a1", 1, reconnect=True, reattach="all")
    await submit(m2, experiment_yaml("b"))

    async def queued() -> bool:
        jobs = (await m2.get("/api/v1/job-queues-v2"))["jobs"]
        states = {j["full"]["name"]: j["full"]["summary"]["state"] for j in jobs}
        return states == {"a": "STATE_SCHEDULED", "b": "STATE_QUEUED"}

    await eventually(queued, timeout=5)
    assert set(back.started) == {f"{alloc}-0"}  # adopted on reattach, nothing new started
    agents_view = (await m2.get("/api/v1/agents/a1"))["agent"]
    assert [c["parent"] for c in agents_view["containers"].values()] == [alloc]
