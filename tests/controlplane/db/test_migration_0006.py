"""Migration 0006 (templates.owner_id) goes up, down and up again on SQLite and PostgreSQL,
keeps the templates it finds (with no owner), and agrees with the models."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import (
    alembic_config,
    make_engine,
    upgrade,
)


async def _look(url: str) -> tuple[set[str], list[object], list[tuple[object, ...]]]:
    def look(conn: sa.Connection) -> tuple[set[str], list[object], list[tuple[object, ...]]]:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("templates")}
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        rows = [tuple(r) for r in conn.execute(sa.text("SELECT * FROM templates")).all()]
        return columns, [d for d in diff if "templates" in repr(d)], rows

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def _add_template(url: str) -> None:
    """A template as 0005 held it, in a workspace of a user, written in 0005's own columns (the
    models are the newest schema's, so the ORM cannot write a 0005 database)."""
    engine = make_engine(url)
    try:
        now = datetime.now(UTC)
        async with engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "INSERT INTO users (id, username, password_hash, admin, active, created_at,"
                    " modified_at) VALUES (1, 'admin', 'x', true, true, :now, :now)"
                ),
                {"now": now},
            )
            await conn.execute(
                sa.text(
                    "INSERT INTO workspaces (id, name, user_id, immutable, archived, created_at)"
                    " VALUES (1, 'Uncategorized', 1, true, false, :now)"
                ),
                {"now": now},
            )
            await conn.execute(
                sa.text(
                    "INSERT INTO templates (name, config, workspace_id, created_at, modified_at)"
                    " VALUES ('old', '{}', 1, :now, :now)"
                ),
                {"now": now},
            )
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url, "0005")
    await _add_template(db_url)
    await upgrade(db_url)
    columns, diff, rows = await _look(db_url)
    assert "owner_id" in columns and diff == []
    assert len(rows) == 1
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0005")
    columns, _, rows = await _look(db_url)
    assert "owner_id" not in columns and len(rows) == 1
    await upgrade(db_url)
    columns, _, _ = await _look(db_url)
    assert "owner_id" in columns
