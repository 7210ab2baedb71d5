"""While the database is away the master says so in one line, and in one more when it is back,
however many pools' loops fail meanwhile; it used to log a ~150-line traceback every pass
(every second, per pool), then a line per pool (issue 38: one for the whole master).

The pools' loops run on a migrated database (SQLite, PostgreSQL); for a second they are pointed
at one that refuses connections, then at the real one again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from controlplane.api.deps import utc_now
from controlplane.db.session import make_engine, make_sessionmaker
from controlplane.services.scheduling.pools import Scheduling
from tests.conftest import make_settings
from tests.support.db_template import migrated
from tests.support.live_master import eventually

POOLS = [{"pool_name": "default"}, {"pool_name": "second"}]
LOGGERS = ("controlplane.scheduling", "controlplane.database")


@pytest.fixture
async def scheduling(db_url: str, tmp_path: Path) -> AsyncIterator[Scheduling]:
    await migrated(db_url)
    engine = make_engine(db_url)
    resources = make_settings(db_url, tmp_path, resource_pools=POOLS).resources
    loops = Scheduling(resources, make_sessionmaker(engine), utc_now, interval_s=0.05)
    await loops.start()
    try:
        yield loops
    finally:
        await loops.stop()
        await engine.dispose()


@pytest.mark.parametrize(
    "dead_url",
    [
        "postgresql+asyncpg://postgres@127.0.0.1:1/nowhere",  # connection refused
        "sqlite+aiosqlite:////proc/no-such-dir/x.db",  # cannot be opened
    ],
)
async def test_one_line_when_the_database_goes_and_one_when_it_is_back(
    scheduling: Scheduling, caplog: pytest.LogCaptureFixture, dead_url: str
) -> None:
    for name in LOGGERS:
        caplog.set_level(logging.INFO, logger=name)

    async def every_pool_passed() -> bool:
        return all(r.last is not None for r in scheduling.pools.values())

    await eventually(every_pool_passed)
    good = scheduling.sessionmaker
    dead = create_async_engine(dead_url)
    scheduling.sessionmaker = make_sessionmaker(dead)
    try:
        await asyncio.sleep(1.0)  # about 20 failed passes per pool
    finally:
        scheduling.sessionmaker = good
        await dead.dispose()

    async def back_everywhere() -> bool:
        return any("is back after" in r.getMessage() for r in _records(caplog))

    await eventually(back_everywhere)
    records = _records(caplog)
    lines = [r.getMessage() for r in records]
    assert len(lines) == 2, lines  # one for the master, not one per pool
    down, back = lines
    assert "database is unavailable" in down and "scheduling pass for pool" in down, lines
    assert "is back after" in back, lines
    assert all(r.exc_info is None for r in records), "no tracebacks while it was away"
    assert all("\n" not in line and len(line) < 400 for line in lines), lines


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name in LOGGERS]
