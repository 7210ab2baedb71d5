"""Migration 0017 (the index on tasks' type and end) goes up, down and up again on SQLite and
PostgreSQL, and agrees with the models."""

from __future__ import annotations

import sqlalchemy as sa

from controlplane.db.session import upgrade
from tests.controlplane.db.migration_support import downgrade, look


def _indexes(inspector: sa.Inspector) -> set[str]:
    return {i["name"] for i in inspector.get_indexes("tasks")}


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url)
    indexes, diff = await look(db_url, _indexes)
    assert "ix_tasks_type_end_time" in indexes and diff == []
    await downgrade(db_url, "0016")
    indexes, _ = await look(db_url, _indexes)
    assert "ix_tasks_type_end_time" not in indexes
    await upgrade(db_url)
    indexes, diff = await look(db_url, _indexes)
    assert "ix_tasks_type_end_time" in indexes and diff == []
