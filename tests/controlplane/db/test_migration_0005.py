"""Migration 0005 (provisioning tables) goes up, down and up again on SQLite and PostgreSQL,
and agrees with the models."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade

TABLES = {"provisioner_launches", "provisioner_events", "provisioner_state"}


async def _inspect(url: str) -> tuple[set[str], list[object]]:
    def look(conn: sa.Connection) -> tuple[set[str], list[object]]:
        tables = set(sa.inspect(conn).get_table_names())
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        return tables, [d for d in diff if any(t in repr(d) for t in TABLES)]

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url, "0004")
    tables, _ = await _inspect(db_url)
    assert not tables & TABLES
    await upgrade(db_url)
    tables, diff = await _inspect(db_url)
    assert tables >= TABLES
    assert diff == []
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0004")
    tables, _ = await _inspect(db_url)
    assert not tables & TABLES
    await upgrade(db_url)
    tables, _ = await _inspect(db_url)
    assert tables >= TABLES
