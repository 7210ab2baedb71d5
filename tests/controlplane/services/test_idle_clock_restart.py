"""The idle clock of a TensorBoard survives a master restart (SQLite and PostgreSQL legs): the
idle check stores it (throttled), and a new master's check, with an empty activity board, kills
the task when the stored clock says so, not a timeout after the restart."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.api.proxy import ActivityBoard
from controlplane.app import create_app
from controlplane.db.models import Allocation, Command, TaskLog
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services.interactive_idle import IdleWatcher
from tests.conftest import Master, make_settings
from tests.controlplane.api.test_smoke_flow import CONFIG

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


@pytest.fixture
async def factory(db_url: str, tmp_path: Path) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """A master's database with a TensorBoard (60 s idle timeout) whose service is ready."""
    # The app's own idle check waits an hour: only the test's watchers run.
    settings = make_settings(db_url, tmp_path, interactive_idle_check_s=3600)
    app = create_app(settings, announce=lambda _: None)
    async with AsyncTestClient(app=app, base_url="http://127.0.0.1") as client:
        m = Master(client=client, admin={}, user={})
        m.user = await m.login("determined")
        r = await m.client.post("/api/v1/experiments", json={"config": CONFIG}, headers=m.user)
        assert r.status_code == 200, r.text
        body = {"experimentIds": [r.json()["experiment"]["id"]], "config": {"idle_timeout": "60s"}}
        r = await m.client.post("/api/v1/tensorboards", json=body, headers=m.user)
        assert r.status_code == 200, r.text
        task_id = r.json()["tensorboard"]["id"]
    engine = make_engine(db_url)
    made = make_sessionmaker(engine)
    async with transaction(made) as session:
        # What the scheduler and the task's readiness report leave (no agent runs here).
        session.add(
            Allocation(
                allocation_id=f"{task_id}.1",
                task_id=task_id,
                state="RUNNING",
                token_hash=uuid.uuid4().hex,
                ready=True,
                start_time=T0,
            )
        )
    try:
        yield made
    finally:
        await engine.dispose()


def watcher(
    factory: async_sessionmaker[AsyncSession], board: ActivityBoard, now: list[datetime]
) -> IdleWatcher:
    client = httpx.AsyncClient()  # notebooks only; a TensorBoard is never asked
    return IdleWatcher(factory, lambda: now[0], board, client, lambda _pool: None, 3600)


async def command(factory: async_sessionmaker[AsyncSession]) -> Command:
    async with factory() as session:
        rows = list(await session.scalars(select(Command)))
        assert len(rows) == 1
        return rows[0]


async def test_a_restarted_master_kills_on_the_stored_clock(
    factory: async_sessionmaker[AsyncSession],
) -> None:
    now = [T0]
    board = ActivityBoard()
    first = watcher(factory, board, now)
    await first.check()  # first seen: the clock starts and is stored
    task_id = (await command(factory)).task_id
    assert (await command(factory)).last_activity_at == T0
    board.touch(task_id, T0 + timedelta(seconds=2))
    now[0] = T0 + timedelta(seconds=3)
    await first.check()  # moved under 5 s: not written
    assert (await command(factory)).last_activity_at == T0
    board.touch(task_id, T0 + timedelta(seconds=30))
    now[0] = T0 + timedelta(seconds=40)
    await first.check()
    assert (await command(factory)).last_activity_at == T0 + timedelta(seconds=30)

    # The master restarts: a new watcher, and an empty activity board.
    restarted = watcher(factory, ActivityBoard(), now)
    now[0] = T0 + timedelta(seconds=85)
    await restarted.check()
    assert (await command(factory)).state == "ACTIVE"  # idle 55 s of 60
    now[0] = T0 + timedelta(seconds=95)
    await restarted.check()  # idle 65 s: an in-memory clock would have restarted at 85 s
    cmd = await command(factory)
    assert cmd.state in ("TERMINATING", "TERMINATED")
    async with factory() as session:
        lines = [
            line.log
            for line in await session.scalars(select(TaskLog).where(TaskLog.task_id == task_id))
        ]
    assert any("TensorBoard received no requests for 65s" in line for line in lines), lines
