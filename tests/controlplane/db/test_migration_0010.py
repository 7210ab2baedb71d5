"""Migration 0010 (workspace defaults, the model registry) goes up, down and up again on SQLite
and PostgreSQL, keeps the workspaces it finds, and agrees with the models."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade

TABLES = {"models", "model_versions"}
WORKSPACE_COLUMNS = {"checkpoint_storage_config", "default_compute_pool", "default_aux_pool"}
OURS = ("models", "model_versions", "workspaces")


async def _look(url: str) -> tuple[set[str], set[str], list[object], list[tuple[object, ...]]]:
    def look(
        conn: sa.Connection,
    ) -> tuple[set[str], set[str], list[object], list[tuple[object, ...]]]:
        inspector = sa.inspect(conn)
        tables = set(inspector.get_table_names())
        columns = {c["name"] for c in inspector.get_columns("workspaces")}
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        rows = [tuple(r) for r in conn.execute(sa.text("SELECT name FROM workspaces")).all()]
        ours = [d for d in diff if any(t in repr(d) for t in OURS)]
        return tables, columns, ours, rows

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url, "0009")
    _, _, _, before = await _look(db_url)
    await upgrade(db_url)
    tables, columns, diff, rows = await _look(db_url)
    assert tables >= TABLES and columns >= WORKSPACE_COLUMNS
    assert diff == [] and rows == before
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0009")
    tables, columns, _, rows = await _look(db_url)
    assert not TABLES & tables and not WORKSPACE_COLUMNS & columns and rows == before
    await upgrade(db_url)
    tables, columns, _, _ = await _look(db_url)
    assert tables >= TABLES and columns >= WORKSPACE_COLUMNS
