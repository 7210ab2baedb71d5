"""Queue positions on both databases: moving ahead/behind, renumbering when no room is left."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import Job, User
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services import jobs
from controlplane.services.scheduling.pools import Scheduling
from resource_pools.config import ResourcesConfig
from tests.support.db_template import migrated

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
async def factory(db_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    await migrated(db_url)
    engine = make_engine(db_url)
    maker = make_sessionmaker(engine)
    async with transaction(maker) as s:
        s.add(User(id=1, username="admin", admin=True, created_at=T0, modified_at=T0))
    async with transaction(maker) as s:
        for i in range(5):
            s.add(
                jobs.new_job(
                    job_id=f"j{i}",
                    job_type="EXPERIMENT",
                    owner=User(id=1),
                    name=f"j{i}",
                    entity_id=str(i),
                    workspace_id=1,
                    resource_pool="default",
                    priority=None,
                    weight=1.0,
                    max_slots=None,
                    now=T0 + timedelta(microseconds=i),  # neighbours 1024 apart
                )
            )
    yield maker
    await engine.dispose()


async def order(maker: async_sessionmaker[AsyncSession]) -> list[str]:
    async with transaction(maker) as s:
        rows = await s.scalars(select(Job.job_id).order_by(Job.queue_position, Job.job_id))
        return list(rows)


async def move(maker: async_sessionmaker[AsyncSession], job: str, other: str, ahead: bool) -> None:
    change = jobs.QueueChange(
        job, ahead_of=other if ahead else None, behind_of=None if ahead else other
    )
    async with transaction(maker) as s:
        admin = await s.get(User, 1)
        assert admin is not None
        scheduling = Scheduling(ResourcesConfig(), maker, lambda: T0)
        await jobs.apply_queue_changes(s, admin, [change], scheduling)


def expected(current: list[str], job: str, other: str, ahead: bool) -> list[str]:
    rest = [j for j in current if j != job]
    at = rest.index(other) + (0 if ahead else 1)
    return [*rest[:at], job, *rest[at:]]


async def test_ahead_and_behind(factory: async_sessionmaker[AsyncSession]) -> None:
    await move(factory, "j4", "j0", ahead=True)
    assert await order(factory) == ["j4", "j0", "j1", "j2", "j3"]
    await move(factory, "j4", "j3", ahead=False)
    assert await order(factory) == ["j0", "j1", "j2", "j3", "j4"]
    # Squeezing between the same two neighbours over and over forces a renumbering.
    for _ in range(14):
        await move(factory, "j3", "j1", ahead=False)
        await move(factory, "j2", "j3", ahead=False)
    assert await order(factory) == ["j0", "j1", "j3", "j2", "j4"]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 4), st.booleans()).filter(
            lambda t: t[0] != t[1]
        ),
        max_size=25,
    )
)
async def test_moves_match_a_list_model(
    factory: async_sessionmaker[AsyncSession], moves: list[tuple[int, int, bool]]
) -> None:
    current = await order(factory)
    for a, b, ahead in moves:
        job, other = f"j{a}", f"j{b}"
        await move(factory, job, other, ahead)
        current = expected(current, job, other, ahead)
        assert await order(factory) == current
