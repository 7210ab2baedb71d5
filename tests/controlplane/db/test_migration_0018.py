"""Migration 0018 (pool bindings and slot quotas) goes up, down and up again on SQLite and
PostgreSQL, agrees with the models, refuses a negative quota and goes with its workspace."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from controlplane.db.session import make_engine, upgrade
from tests.controlplane.db.migration_support import downgrade, look

TABLES = {"rp_workspace_bindings", "workspace_pool_quotas"}


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
    await downgrade(db_url, "0017")
    tables, _ = await look(db_url, _tables)
    assert tables == set()
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES and diff == []


async def test_rows_go_with_their_workspace_and_quotas_are_not_negative(db_url: str) -> None:
    await upgrade(db_url)
    await _exec(
        db_url,
        "INSERT INTO users (id, username, password_hash, admin, active, created_at, modified_at) "
        "VALUES (70, 'quota-owner', '', false, true, '2026-01-01 00:00:00', "
        "'2026-01-01 00:00:00')",
        "INSERT INTO workspaces (id, name, user_id, immutable, archived, created_at, state) "
        "VALUES (7, 'team', 70, false, false, '2026-01-01 00:00:00', 'UNSPECIFIED')",
        "INSERT INTO rp_workspace_bindings (resource_pool, workspace_id) VALUES ('gpu', 7)",
        "INSERT INTO workspace_pool_quotas (workspace_id, resource_pool, max_slots) "
        "VALUES (7, 'gpu', 8)",
    )
    with pytest.raises(sa.exc.IntegrityError):
        await _exec(
            db_url,
            "INSERT INTO workspace_pool_quotas (workspace_id, resource_pool, max_slots) "
            "VALUES (7, 'cpu', -1)",
        )
    with pytest.raises(sa.exc.IntegrityError):  # one binding per pool and workspace
        await _exec(
            db_url,
            "INSERT INTO rp_workspace_bindings (resource_pool, workspace_id) VALUES ('gpu', 7)",
        )
    await _exec(db_url, "DELETE FROM workspaces WHERE id = 7")
    left = await _exec(
        db_url,
        "SELECT (SELECT count(*) FROM rp_workspace_bindings) "
        "+ (SELECT count(*) FROM workspace_pool_quotas)",
    )
    assert left == [(0,)]
