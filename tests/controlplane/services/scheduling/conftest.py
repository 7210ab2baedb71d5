"""A live master (real HTTP and WebSocket on loopback) with fake agents, on both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from controlplane.db.models import StateChange
from tests.support.fake_agent import FakeAgent, fake_agents
from tests.support.live_master import LiveMaster, master_starter

StartMaster = Callable[..., Awaitable[LiveMaster]]


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


@pytest.fixture
async def start_master(db_url: str, tmp_path: Path) -> AsyncIterator[StartMaster]:
    async with master_starter(db_url, tmp_path) as start:
        yield start


@pytest.fixture
async def agents() -> AsyncIterator[list[FakeAgent]]:
    async with fake_agents() as made:
        yield made


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
