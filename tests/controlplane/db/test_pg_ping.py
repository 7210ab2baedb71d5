"""The PostgreSQL pool's check of each connection it hands out: one round trip (SQLAlchemy's
own wraps it in BEGIN and ROLLBACK), and a connection the server dropped is still replaced."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
import sqlalchemy as sa

from controlplane.db.session import make_engine
from tests.conftest import _PG_SKIP, fresh_pg_database

pytestmark = pytest.mark.skipif(bool(_PG_SKIP), reason=str(_PG_SKIP))


async def test_the_ping_is_one_round_trip_and_a_dropped_connection_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with fresh_pg_database() as url:
        engine = make_engine(url)
        try:
            async with engine.connect() as conn:
                first = await conn.scalar(sa.text("SELECT pg_backend_pid()"))
            queries: list[str] = []
            transactions: list[object] = []
            fetchrow = asyncpg.Connection.fetchrow
            transaction = asyncpg.Connection.transaction

            async def counted_fetchrow(self: Any, query: str, *args: Any, **kw: Any) -> Any:
                queries.append(query)
                return await fetchrow(self, query, *args, **kw)

            def counted_transaction(self: Any, *args: Any, **kw: Any) -> Any:
                transactions.append(args)
                return transaction(self, *args, **kw)

            monkeypatch.setattr(asyncpg.Connection, "fetchrow", counted_fetchrow)
            monkeypatch.setattr(asyncpg.Connection, "transaction", counted_transaction)
            async with engine.connect() as conn:  # the pooled connection: pinged first
                assert await conn.scalar(sa.text("SELECT pg_backend_pid()")) == first
            assert queries == [";"]
            assert len(transactions) == 1  # the statement's own, none for the ping
            monkeypatch.undo()
            # The server drops the pooled connection: the ping sees it, the pool reconnects.
            other = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
            try:
                assert await other.fetchval("SELECT pg_terminate_backend($1)", first)
            finally:
                await other.close()
            async with engine.connect() as conn:
                pid = await conn.scalar(sa.text("SELECT pg_backend_pid()"))
            assert pid != first
            async with engine.connect() as conn:
                assert await conn.scalar(sa.text("SELECT 1")) == 1
        finally:
            await engine.dispose()
