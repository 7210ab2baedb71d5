"""Helpers for a live master (real HTTP and WebSocket on loopback) with fake agents, on both
databases; the `start_master` and `agents` fixtures come from tests/controlplane/services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from controlplane.db.models import StateChange
from tests.conftest import PASSWORD, make_settings
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually, live_master
from tests.support.live_master import StartMaster as StartMaster


def experiment_yaml(
    name: str = "exp",
    slots: int = 1,
    priority: int | None = None,
    pool: str | None = None,
    trials: int = 1,
    weight: float | None = None,
) -> str:
    searcher = "  name: single\n" if trials == 1 else f"  name: random\n  max_trials: {trials}\n"
    lines = [
        f"name: {name}",
        "entrypoint: python3 train.py",
        "searcher:",
        searcher.rstrip("\n"),
        "  metric: loss",
        "  max_length: 10",
        "hyperparameters:",
        "  lr: {type: double, minval: 0.01, maxval: 0.1}",
        "resources:",
        f"  slots_per_trial: {slots}",
    ]
    if priority is not None:
        lines.append(f"  priority: {priority}")
    if weight is not None:
        lines.append(f"  weight: {weight}")
    if pool is not None:
        lines.append(f"  resource_pool: {pool}")
    return "\n".join(lines) + "\n"


async def add_agent(
    m: LiveMaster, made: list[FakeAgent], agent_id: str, slots: int, **kw: Any
) -> FakeAgent:
    agent = FakeAgent(m.ws_url, agent_id, slots, **kw)
    made.append(agent)
    await agent.connect()
    return agent


async def submit(m: LiveMaster, config: str, expect: int = 200) -> Any:
    return await m.post(
        "/api/v1/experiments", {"config": config, "modelDefinition": [], "activate": True}, expect
    )


async def trial_of(m: LiveMaster, exp_id: int) -> dict[str, Any]:
    return (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"][0]


async def history_of(m: LiveMaster, allocation_id: str) -> list[tuple[str | None, str, str]]:
    """The allocation's recorded changes and notes, (from, to, reason), oldest first."""
    async with m.app.state["api"].sessionmaker() as session:
        rows = await session.execute(
            select(StateChange.from_state, StateChange.to_state, StateChange.reason)
            .where(StateChange.entity == "allocation", StateChange.entity_id == allocation_id)
            .order_by(StateChange.id)
        )
        return [tuple(r) for r in rows.all()]


async def allocations_on(agent: FakeAgent, timeout: float = 5) -> set[str]:
    """The allocations `agent` runs, once it runs any."""

    async def running() -> set[str]:
        return agent.allocations()

    return await eventually(running, timeout=timeout)


async def run_one_trial(
    m: LiveMaster, agent: FakeAgent, config: str | None = None
) -> tuple[dict[str, Any], str]:
    """Submit an experiment (`config`, or a single-trial one) and wait until `agent` runs it.

    Returns the experiment and the one allocation the agent runs.
    """
    exp = (await submit(m, config or experiment_yaml("e")))["experiment"]
    (alloc,) = await allocations_on(agent)
    return exp, alloc


async def placed_container(agent: FakeAgent) -> str:
    """The id of the one container the master asked `agent` to start, once it has."""

    async def placed() -> bool:
        return len(agent.started) == 1

    await eventually(placed, timeout=5)
    (container_id,) = agent.started
    return container_id


async def trial_reaches(m: LiveMaster, exp_id: int, state: str) -> None:
    """Wait until the experiment's (first) trial is in `state`."""

    async def reached() -> bool:
        return (await trial_of(m, exp_id))["state"] == state

    await eventually(reached, timeout=5)


async def seen_gone(m: LiveMaster, agent_id: str) -> None:
    """A real agent waits its backoff before it redials; wait until the master saw the loss."""

    async def away() -> bool:
        view = (await m.get(f"/api/v1/agents/{agent_id}"))["agent"]
        return view["connected"] is False

    await eventually(away, timeout=5)


async def run_a_trial_then_stop_the_master(
    db_url: str, tmp_path: Path, made: list[FakeAgent], **settings: Any
) -> tuple[FakeAgent, int, str]:
    """A master of its own runs one trial on agent a1 (one slot), then stops; a1 has dropped.

    Returns a1, the experiment's id and the allocation that ran.
    """
    async with live_master(make_settings(db_url, tmp_path, **settings), PASSWORD) as m:
        agent = await add_agent(m, made, "a1", 1)
        exp, alloc = await run_one_trial(m, agent)
        await agent.drop()
    return agent, exp["id"], alloc
