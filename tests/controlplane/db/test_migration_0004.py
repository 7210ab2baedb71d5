"""Migration 0004 (trials.run_metadata) goes up, down and up again on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade


async def _inspect(url: str) -> tuple[set[str], list[object]]:
    """The trials table's columns, and how the models differ from it about run_metadata."""

    def look(conn: sa.Connection) -> tuple[set[str], list[object]]:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("trials")}
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        return columns, [d for d in diff if "run_metadata" in repr(d)]

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url, "0003")
    columns, _ = await _inspect(db_url)
    assert "run_metadata" not in columns
    await upgrade(db_url)
    columns, diff = await _inspect(db_url)
    assert "run_metadata" in columns
    assert diff == []  # the model and the migration agree (type, nullability)
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0003")
    columns, _ = await _inspect(db_url)
    assert "run_metadata" not in columns
    await upgrade(db_url)
    columns, _ = await _inspect(db_url)
    assert "run_metadata" in columns
