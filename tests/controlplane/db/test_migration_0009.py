"""Migration 0009 (checkpoint GC columns) goes up, down and up again on SQLite and PostgreSQL,
keeps the checkpoints it finds (unprotected, no deletion requested), and agrees with the
models."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade

CKPT_COLUMNS = {
    "protected",
    "delete_requested_at",
    "delete_attempts",
    "delete_globs",
    "delete_error",
    "delete_retry_at",
    "deleted_at",
}
TABLES = ("checkpoints", "experiments")


async def _look(url: str) -> tuple[set[str], set[str], list[object]]:
    def look(conn: sa.Connection) -> tuple[set[str], set[str], list[object]]:
        inspector = sa.inspect(conn)
        ckpt = {c["name"] for c in inspector.get_columns("checkpoints")}
        exp = {c["name"] for c in inspector.get_columns("experiments")}
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        return ckpt, exp, [d for d in diff if any(t in repr(d) for t in TABLES)]

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def _execute(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            result = await conn.execute(sa.text(sql))
            return [tuple(r) for r in result.all()] if result.returns_rows else []
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url, "0008")
    await _execute(
        db_url,
        "INSERT INTO checkpoints (uuid, state, report_time, resources, metadata, steps_completed)"
        " VALUES ('0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0', 'COMPLETED', CURRENT_TIMESTAMP,"
        " '{}', '{}', 3)",
    )
    await upgrade(db_url)
    ckpt, exp, diff = await _look(db_url)
    assert ckpt >= CKPT_COLUMNS and "gc_requested_at" in exp and diff == []
    rows = await _execute(
        db_url, "SELECT uuid, protected, delete_attempts, delete_requested_at FROM checkpoints"
    )
    assert [(r[0], bool(r[1]), r[2], r[3]) for r in rows] == [
        ("0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", False, 0, None)
    ]
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0008")
    ckpt, exp, _ = await _look(db_url)
    assert not CKPT_COLUMNS & ckpt and "gc_requested_at" not in exp
    assert len(await _execute(db_url, "SELECT uuid FROM checkpoints")) == 1
    await upgrade(db_url)
    ckpt, exp, _ = await _look(db_url)
    assert ckpt >= CKPT_COLUMNS and "gc_requested_at" in exp
