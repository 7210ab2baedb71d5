"""Engine, session factory and migrations."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.util.concurrency import await_

from controlplane.db import sqlite_driver

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def _json_dumps(value: object) -> str:
    return msgspec.json.encode(value).decode()


# msgspec (already a Litestar dependency) is several times faster than the stdlib for the big
# JSON columns (expanded configs, metric reports).
JSON_CODECS = {"json_serializer": _json_dumps, "json_deserializer": msgspec.json.decode}


def make_engine(url: str, *, pool_size: int = 10, echo: bool = False) -> AsyncEngine:
    """An engine for PostgreSQL (asyncpg) or SQLite (aiosqlite, WAL, foreign keys on)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(
            url,
            echo=echo,
            connect_args={"timeout": 30},
            module=sqlite_driver.dbapi(),
            **JSON_CODECS,
        )

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    engine = create_async_engine(
        url,
        echo=echo,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        # The master's queries are short lookups whose estimates run high (correlated subqueries
        # of the experiment list): PostgreSQL's JIT then spends seconds compiling a query that
        # runs in milliseconds. Nothing the master runs is long enough to win it back.
        connect_args={"server_settings": {"jit": "off"}},
        **JSON_CODECS,
    )
    if engine.dialect.driver == "asyncpg":
        engine.sync_engine.dialect.do_ping = _ping  # type: ignore[method-assign]
    return engine


def _ping(dbapi_connection: Any) -> bool:
    """The pool's check of a connection it hands out, in one round trip. SQLAlchemy's asyncpg
    ping wraps its query in BEGIN and ROLLBACK (for pgbouncer's transaction mode, which the
    master does not use): three round trips per transaction, a quarter of a searched trial's."""
    try:
        await_(dbapi_connection._connection.fetchrow(";"))
    except Exception as error:
        dbapi_connection._handle_exception(error)
    return True


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


@asynccontextmanager
async def transaction(factory: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """One unit of work: commit on success, roll back on any error."""
    async with factory() as session, session.begin():
        yield session


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade_sync(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


async def upgrade(url: str, revision: str = "head") -> None:
    """Run migrations to `revision` (Alembic's async env runs its own loop, so use a thread)."""
    await asyncio.to_thread(upgrade_sync, url, revision)
