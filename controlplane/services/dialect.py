"""The one place that knows which SQL dialect is underneath (upserts differ)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession


def insert_ignoring_duplicates(session: AsyncSession, table: Any, index: list[str]) -> Any:
    """INSERT … ON CONFLICT (index) DO NOTHING for the session's dialect."""
    name = session.bind.dialect.name if session.bind is not None else "sqlite"
    if name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=index)
    return sqlite.insert(table).on_conflict_do_nothing(index_elements=index)
