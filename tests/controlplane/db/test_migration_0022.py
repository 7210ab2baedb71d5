"""Migration 0022 (webhooks, their triggers, the outbox and the deliveries) goes up, down and up
again on SQLite and PostgreSQL, agrees with the models, and a webhook's triggers go with it."""

from __future__ import annotations

import sqlalchemy as sa

from controlplane.db.session import make_engine, upgrade
from tests.controlplane.db.migration_support import downgrade, look

TABLES = {"webhooks", "webhook_triggers", "webhook_events", "webhook_deliveries"}


def _tables(inspector: sa.Inspector) -> set[str]:
    return set(inspector.get_table_names()) & TABLES


async def _exec(url: str, *statements: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            if conn.dialect.name == "sqlite":
                await conn.execute(sa.text("PRAGMA foreign_keys=ON"))
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
    await downgrade(db_url, "0021")
    tables, _ = await look(db_url, _tables)
    assert tables == set()
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES and diff == []


async def test_triggers_go_with_their_webhook(db_url: str) -> None:
    await upgrade(db_url)
    when = "'2026-01-01 00:00:00'"
    rows = await _exec(
        db_url,
        "INSERT INTO webhooks (id, name, url, webhook_type, mode, workspace_id, created_at) "
        f"VALUES (4, '', 'http://127.0.0.1/x', 'DEFAULT', 'WORKSPACE', NULL, {when})",
        "INSERT INTO webhook_triggers (webhook_id, trigger_type, condition) "
        "VALUES (4, 'CUSTOM', '{}')",
        "DELETE FROM webhooks WHERE id = 4",
        "SELECT count(*) FROM webhook_triggers",
    )
    assert rows == [(0,)]
