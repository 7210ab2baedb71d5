"""Migration 0013 (allocations.proxy_secret) goes up, down and up again on SQLite and
PostgreSQL, and agrees with the models."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade


async def _look(url: str) -> tuple[set[str], list[object]]:
    def look(conn: sa.Connection) -> tuple[set[str], list[object]]:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("allocations")}
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        return columns, list(diff)

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url)
    columns, diff = await _look(db_url)
    assert "proxy_secret" in columns and diff == []
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0012")
    columns, _ = await _look(db_url)
    assert "proxy_secret" not in columns and "proxy_address" in columns
    await upgrade(db_url)
    columns, diff = await _look(db_url)
    assert "proxy_secret" in columns and diff == []
