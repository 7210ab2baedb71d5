"""Migration 0013 (allocations.proxy_secret) goes up, down and up again on SQLite and
PostgreSQL, and agrees with the models."""

from __future__ import annotations

import sqlalchemy as sa

from controlplane.db.session import upgrade
from tests.controlplane.db.migration_support import downgrade, look


def _columns(inspector: sa.Inspector) -> set[str]:
    return {c["name"] for c in inspector.get_columns("allocations")}


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url)
    columns, diff = await look(db_url, _columns)
    assert "proxy_secret" in columns and diff == []
    await downgrade(db_url, "0012")
    columns, _ = await look(db_url, _columns)
    assert "proxy_secret" not in columns and "proxy_address" in columns
    await upgrade(db_url)
    columns, diff = await look(db_url, _columns)
    assert "proxy_secret" in columns and diff == []
