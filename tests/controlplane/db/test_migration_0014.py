"""Migration 0014 (workspace and project deletion state, commands.last_activity_at) goes up,
down and up again on SQLite and PostgreSQL, and agrees with the models."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade


async def _look(url: str) -> tuple[dict[str, set[str]], list[object]]:
    def look(conn: sa.Connection) -> tuple[dict[str, set[str]], list[object]]:
        inspector = sa.inspect(conn)
        columns = {
            t: {c["name"] for c in inspector.get_columns(t)}
            for t in ("workspaces", "projects", "commands")
        }
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
    assert {"state", "error_message"} <= columns["workspaces"] & columns["projects"]
    assert "last_activity_at" in columns["commands"] and diff == []
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0013")
    columns, _ = await _look(db_url)
    assert "state" not in columns["workspaces"] | columns["projects"]
    assert "last_activity_at" not in columns["commands"]
    await upgrade(db_url)
    columns, diff = await _look(db_url)
    assert "state" in columns["projects"] and diff == []
