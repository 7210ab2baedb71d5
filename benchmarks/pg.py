"""PostgreSQL helpers: throwaway databases (always dropped) and the numbers we read back."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

# The maintenance database we connect to for CREATE/DROP DATABASE.
ADMIN_DSN = os.environ.get("RESOLUTE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def dsn(database: str) -> str:
    """A libpq DSN for `database` on the benchmark's server."""
    return f"{ADMIN_DSN.rsplit('/', 1)[0]}/{database}"


def sqlalchemy_url(database: str) -> str:
    """What the master's DET_DB_URL wants (SQLAlchemy + asyncpg)."""
    return dsn(database).replace("postgresql://", "postgresql+asyncpg://", 1)


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(ADMIN_DSN, timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


class Databases:
    """Creates uniquely named databases and drops every one of them on exit."""

    def __init__(self, prefix: str = "resolute_bench") -> None:
        self.run_id = uuid.uuid4().hex[:8]
        self.prefix = prefix
        self.created: list[str] = []

    async def create(self, purpose: str) -> str:
        name = f"{self.prefix}_{self.run_id}_{purpose}"
        await _admin(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        return name

    async def drop_all(self) -> None:
        while self.created:
            name = self.created.pop()
            await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@asynccontextmanager
async def databases(prefix: str = "resolute_bench") -> AsyncIterator[Databases]:
    dbs = Databases(prefix)
    try:
        yield dbs
    finally:
        await dbs.drop_all()


@asynccontextmanager
async def connect(database: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(dsn(database), timeout=10)
    try:
        yield conn
    finally:
        await conn.close()


# Values stored in our `metrics` rows (the keys of avg_metrics plus the keys of every batch),
# counting only rows of the given trials at or past the given step (the timed window's reports).
COUNT_STORED_VALUES = """
SELECT count(*) AS reports,
       coalesce(sum(
         (SELECT count(*) FROM jsonb_object_keys(m.metrics -> 'avg_metrics'))
         + coalesce((SELECT sum((SELECT count(*) FROM jsonb_object_keys(b)))
                     FROM jsonb_array_elements(
                       CASE WHEN jsonb_typeof(m.metrics -> 'batch_metrics') = 'array'
                            THEN m.metrics -> 'batch_metrics' ELSE '[]'::jsonb END) AS b), 0)
       ), 0)::bigint AS metric_values
FROM metrics AS m
JOIN unnest($1::int[], $2::bigint[]) AS w(trial_id, min_steps)
  ON m.trial_id = w.trial_id AND m.total_batches >= w.min_steps
"""


async def stored_metric_values(database: str, since: dict[int, int]) -> tuple[int, int]:
    """(reports, metric values) in the master's `metrics` table; since = {trial: min steps}."""
    async with connect(database) as conn:
        row = await conn.fetchrow(COUNT_STORED_VALUES, list(since), list(since.values()))
    return int(row["reports"]), int(row["metric_values"])


async def server_version() -> str:
    conn = await asyncpg.connect(ADMIN_DSN, timeout=10)
    try:
        return str(await conn.fetchval("SHOW server_version"))
    finally:
        await conn.close()
