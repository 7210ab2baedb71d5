"""Migration 0023 (access tokens, per-user UI settings, pins, recent projects, the cluster
message) goes up, down and up again on SQLite and PostgreSQL and agrees with the models; a
session from before it reads as a login's session."""

from __future__ import annotations

import sqlalchemy as sa

from controlplane.db.session import make_engine, upgrade
from tests.controlplane.db.migration_support import downgrade, look

TABLES = {
    "user_settings",
    "workspace_pins",
    "project_activity",
    "cluster_messages",
    "config_policies",
}


def _tables(inspector: sa.Inspector) -> set[str]:
    return set(inspector.get_table_names()) & TABLES


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES and diff == []
    await downgrade(db_url, "0022")
    tables, _ = await look(db_url, _tables)
    assert tables == set()
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES and diff == []


async def test_an_older_session_is_a_login_session(db_url: str) -> None:
    await upgrade(db_url)
    await downgrade(db_url, "0022")
    engine = make_engine(db_url)
    when = "'2026-01-01 00:00:00'"
    try:
        async with engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "INSERT INTO users (id, username, password_hash, admin, active, created_at, "
                    f"modified_at) VALUES (81, 'tok-user', '', false, true, {when}, {when})"
                )
            )
            await conn.execute(
                sa.text(
                    "INSERT INTO user_sessions (user_id, token_hash, created_at, expires_at) "
                    f"VALUES (81, 'abc', {when}, {when})"
                )
            )
    finally:
        await engine.dispose()
    await upgrade(db_url)
    engine = make_engine(db_url)
    try:
        async with engine.begin() as conn:
            row = (
                await conn.execute(
                    sa.text(
                        "SELECT token_type, description, revoked_at FROM user_sessions "
                        "WHERE token_hash = 'abc'"
                    )
                )
            ).one()
    finally:
        await engine.dispose()
    assert tuple(row) == ("USER_SESSION", None, None)
