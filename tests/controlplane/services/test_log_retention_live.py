"""Task-log retention on SQLite and PostgreSQL: only logs of tasks that ended more than
log_retention_days ago go; running tasks, recent ones and trials that are still running keep
theirs. Also the periodic job's own pass and `POST /api/v1/cleanup_logs`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import Task, TaskLog, User
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services.log_retention import delete_expired_logs
from controlplane.services.periodic_jobs import PeriodicJobs
from tests.support.db_template import migrated

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


@pytest.fixture
async def factory(db_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    await migrated(db_url)
    engine = make_engine(db_url)
    made = make_sessionmaker(engine)
    async with transaction(made) as s:
        s.add(
            User(
                username="u",
                password_hash="",
                admin=False,
                active=True,
                created_at=NOW,
                modified_at=NOW,
            )
        )
    try:
        yield made
    finally:
        await engine.dispose()


async def _task(s: AsyncSession, task_id: str, ended_days_ago: float | None, lines: int) -> None:
    owner = await s.scalar(select(User.id).where(User.username == "u"))
    end = None if ended_days_ago is None else NOW - timedelta(days=ended_days_ago)
    s.add(
        Task(
            task_id=task_id,
            task_type="COMMAND",
            owner_id=owner,
            start_time=NOW - timedelta(days=100),
            end_time=end,
        )
    )
    await s.flush()
    for i in range(lines):
        s.add(TaskLog(task_id=task_id, timestamp=NOW - timedelta(days=99), log=f"line {i}\n"))


async def _counts(factory: async_sessionmaker[AsyncSession]) -> dict[str, int]:
    async with transaction(factory) as s:
        rows = await s.execute(select(TaskLog.task_id, func.count()).group_by(TaskLog.task_id))
        return {task_id: n for task_id, n in rows}


async def _world(factory: async_sessionmaker[AsyncSession]) -> None:
    async with transaction(factory) as s:
        await _task(s, "old", 31, 3)
        await _task(s, "recent", 29, 2)
        await _task(s, "running", None, 4)


@pytest.mark.parametrize(
    ("days", "left"),
    [
        (30, {"recent": 2, "running": 4}),
        (60, {"old": 3, "recent": 2, "running": 4}),
        (0, {"running": 4}),
        (-1, {"old": 3, "recent": 2, "running": 4}),
        (None, {"old": 3, "recent": 2, "running": 4}),
    ],
)
async def test_only_old_logs_of_ended_tasks_go(
    factory: async_sessionmaker[AsyncSession], days: int | None, left: dict[str, int]
) -> None:
    await _world(factory)
    async with transaction(factory) as s:
        removed = await delete_expired_logs(s, now=NOW, retention_days=days)
    assert await _counts(factory) == left
    assert removed == 9 - sum(left.values())


@pytest.mark.parametrize(
    ("days", "left"),
    [
        (None, {"forever": 3, "long": 2}),
        (30, {"forever": 3, "long": 2}),
        (-1, {"forever": 3, "long": 2}),
        (90, {"forever": 3, "long": 2, "policy": 1}),
    ],
)
async def test_a_tasks_own_retention_overrides_the_masters(
    factory: async_sessionmaker[AsyncSession], days: int | None, left: dict[str, int]
) -> None:
    """`det t set log-retention`: -1 keeps a task's logs past the master's policy, N days
    removes them after N days even where the master keeps logs forever."""
    async with transaction(factory) as s:
        await _task(s, "forever", 31, 3)
        await _task(s, "short", 2, 4)
        await _task(s, "long", 31, 2)
        await _task(s, "policy", 40, 1)
    async with transaction(factory) as s:
        for task_id, own in (("forever", -1), ("short", 1), ("long", 60)):
            (await s.get(Task, task_id)).log_retention_days = own  # type: ignore[union-attr]
    async with transaction(factory) as s:
        await delete_expired_logs(s, now=NOW, retention_days=days)
    if days is None or days < 0:
        left = {**left, "policy": 1}
    assert await _counts(factory) == left


async def test_the_periodic_job_applies_the_master_policy(
    factory: async_sessionmaker[AsyncSession],
) -> None:
    await _world(factory)
    jobs = PeriodicJobs(
        factory,
        lambda: NOW,
        default_storage={},
        gc_interval_s=3600,
        log_retention_days=30,
        retention_schedule="0 0 * * *",
    )
    await jobs.start()
    try:
        assert await jobs.run_log_retention() == 3
    finally:
        await jobs.stop()
    assert await _counts(factory) == {"recent": 2, "running": 4}


@pytest.mark.parametrize("grace_s", [5.0, 0.05])
async def test_stop_waits_for_a_pass_in_flight_or_cancels_it(
    factory: async_sessionmaker[AsyncSession], grace_s: float
) -> None:
    """A pass still running when the app stops used to outlive the app: its database call was
    cancelled while the event loop closed, and closing the SQLite connection then hung."""
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    async def slow_pass() -> None:
        started.set()
        try:
            await release.wait()
            async with transaction(factory) as session:
                await session.execute(select(func.count()).select_from(TaskLog))
            finished.append("done")
        except asyncio.CancelledError:
            finished.append("cancelled")
            raise

    jobs = PeriodicJobs(
        factory,
        lambda: datetime.now(UTC),  # the first pass is due now
        default_storage={},
        gc_interval_s=3600,
        log_retention_days=None,
        retention_schedule="0 0 * * *",
    )
    jobs.run_gc = slow_pass  # type: ignore[method-assign]
    await jobs.start()
    await asyncio.wait_for(started.wait(), 10)
    if grace_s > 1:
        asyncio.get_running_loop().call_later(0.1, release.set)
    await jobs.stop(grace_s=grace_s)
    assert finished == (["done"] if grace_s > 1 else ["cancelled"])
    assert not jobs._running
