"""What the migration tests read back: something of the schema, and how it differs from the
models (alembic's autogenerate comparison; empty when the migrations and models agree)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine

T = TypeVar("T")


async def look(url: str, read: Callable[[sa.Inspector], T]) -> tuple[T, list[object]]:
    def both(conn: sa.Connection) -> tuple[T, list[object]]:
        seen = read(sa.inspect(conn))
        return seen, list(compare_metadata(MigrationContext.configure(conn), Base.metadata))

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(both)
    finally:
        await engine.dispose()


async def downgrade(url: str, revision: str) -> None:
    await asyncio.to_thread(command.downgrade, alembic_config(url), revision)
