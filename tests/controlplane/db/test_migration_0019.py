"""Migration 0019 (user groups, role assignments, audit log) goes up, down and up again on
SQLite and PostgreSQL, agrees with the models, and keeps an assignment to one user or one group,
going with its user, group or workspace."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from controlplane.db.session import make_engine, upgrade
from tests.controlplane.db.migration_support import downgrade, look

TABLES = {"user_groups", "user_group_members", "role_assignments", "audit_log"}


def _tables(inspector: sa.Inspector) -> set[str]:
    return set(inspector.get_table_names()) & TABLES


async def _exec(url: str, *statements: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            rows: list[tuple[object, ...]] = []
            for sql in statements:
                result = await conn.execute(sa.text(sql))
                rows = [tuple(r) for r in result.all()] if result.returns_rows else []
            return rows
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES and diff == []
    await downgrade(db_url, "0018")
    tables, _ = await look(db_url, _tables)
    assert tables == set()
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES and diff == []


async def test_assignments_name_one_holder_and_go_with_it(db_url: str) -> None:
    await upgrade(db_url)
    when = "'2026-01-01 00:00:00'"
    await _exec(
        db_url,
        "INSERT INTO users (id, username, password_hash, admin, active, created_at, modified_at) "
        f"VALUES (71, 'rbac-user', '', false, true, {when}, {when})",
        "INSERT INTO workspaces (id, name, user_id, immutable, archived, created_at, state) "
        f"VALUES (8, 'rbac-ws', 71, false, false, {when}, 'UNSPECIFIED')",
        f"INSERT INTO user_groups (id, name, created_at) VALUES (5, 'team', {when})",
        "INSERT INTO user_group_members (group_id, user_id) VALUES (5, 71)",
        "INSERT INTO role_assignments (role_id, user_id, workspace_id) VALUES (5, 71, 8)",
        "INSERT INTO role_assignments (role_id, group_id, workspace_id) VALUES (4, 5, NULL)",
    )
    for holders in ("NULL, NULL", "71, 5"):  # neither, or both
        with pytest.raises(sa.exc.IntegrityError):
            await _exec(
                db_url,
                f"INSERT INTO role_assignments (role_id, user_id, group_id) VALUES (4, {holders})",
            )
    with pytest.raises(sa.exc.IntegrityError):  # a name is one group
        await _exec(db_url, f"INSERT INTO user_groups (name, created_at) VALUES ('team', {when})")
    await _exec(db_url, "DELETE FROM workspaces WHERE id = 8")
    assert await _exec(db_url, "SELECT count(*) FROM role_assignments") == [(1,)]
    await _exec(db_url, "DELETE FROM user_groups WHERE id = 5")
    left = await _exec(
        db_url,
        "SELECT (SELECT count(*) FROM role_assignments) "
        "+ (SELECT count(*) FROM user_group_members)",
    )
    assert left == [(0,)]
