"""Migration 0007 (users.agent_uid/agent_gid/agent_user/agent_group) goes up, down and up
again on SQLite and PostgreSQL, keeps the users it finds (unlinked), and agrees with the
models; the largest uid Linux has fits."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade

COLUMNS = {"agent_uid", "agent_gid", "agent_user", "agent_group"}


async def _look(url: str) -> tuple[set[str], list[object], list[tuple[object, ...]]]:
    def look(conn: sa.Connection) -> tuple[set[str], list[object], list[tuple[object, ...]]]:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("users")}
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        rows = [tuple(r) for r in conn.execute(sa.text("SELECT username FROM users")).all()]
        return columns, [d for d in diff if "users" in repr(d)], rows

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def _execute(url: str, sql: str, **params: object) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            result = await conn.execute(sa.text(sql), params)
            return [tuple(r) for r in result.all()] if result.returns_rows else []
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url, "0006")
    await _execute(
        db_url,
        "INSERT INTO users (username, password_hash, admin, active, created_at, modified_at)"
        " VALUES ('old', '', false, true, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
    )
    await upgrade(db_url)
    columns, diff, rows = await _look(db_url)
    assert columns >= COLUMNS and diff == [] and rows == [("old",)]
    largest = 2**32 - 2
    await _execute(
        db_url,
        "UPDATE users SET agent_uid = :n, agent_gid = :n, agent_user = 'u', agent_group = 'g'",
        n=largest,
    )
    got = await _execute(db_url, "SELECT agent_uid, agent_gid FROM users")
    assert got == [(largest, largest)]
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0006")
    columns, _, rows = await _look(db_url)
    assert not COLUMNS & columns and rows == [("old",)]
    await upgrade(db_url)
    columns, _, _ = await _look(db_url)
    assert columns >= COLUMNS
