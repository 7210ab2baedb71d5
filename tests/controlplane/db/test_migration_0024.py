"""Migration 0024 (trial source infos) goes up, down and up again on SQLite and PostgreSQL,
and agrees with the models."""

from __future__ import annotations

import sqlalchemy as sa

from controlplane.db.session import upgrade
from tests.controlplane.db.migration_support import downgrade, look

TABLES = {"trial_source_infos"}


def _tables(inspector: sa.Inspector) -> set[str]:
    return set(inspector.get_table_names()) & TABLES


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES and diff == []
    await downgrade(db_url, "0023")
    tables, _ = await look(db_url, _tables)
    assert tables == set()
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES and diff == []
