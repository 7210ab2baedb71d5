"""Migration 0011 (allocations.proxy_address, commands.private_key) goes up, down and up again
on SQLite and PostgreSQL, and agrees with the models."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade


async def _look(url: str) -> tuple[set[str], set[str], list[object]]:
    def look(conn: sa.Connection) -> tuple[set[str], set[str], list[object]]:
        inspector = sa.inspect(conn)
        allocations = {c["name"] for c in inspector.get_columns("allocations")}
        commands = {c["name"] for c in inspector.get_columns("commands")}
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        return allocations, commands, list(diff)

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url)
    allocations, commands, diff = await _look(db_url)
    assert "proxy_address" in allocations and "private_key" in commands
    assert diff == []
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0010")
    allocations, commands, _ = await _look(db_url)
    assert "proxy_address" not in allocations and "private_key" not in commands
    await upgrade(db_url)
    allocations, commands, diff = await _look(db_url)
    assert "proxy_address" in allocations and "private_key" in commands and diff == []
