"""Migration 0016 (metric_rollups) goes up, down and up again on SQLite and PostgreSQL, agrees
with the models, and backfills the rollups of the reports stored before it."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.models import MetricRollup
from controlplane.db.session import alembic_config, make_engine, make_sessionmaker, upgrade
from controlplane.domain import series_rollup
from tests.conftest import Master
from tests.controlplane.api.test_trial_metrics_api import _report, _trials
from tests.controlplane.api.test_trials_api import report


async def _look(url: str) -> tuple[set[str], list[object]]:
    def look(conn: sa.Connection) -> tuple[set[str], list[object]]:
        tables = set(sa.inspect(conn).get_table_names())
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        return tables, list(diff)

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def _rollups(url: str) -> dict:
    engine = make_engine(url)
    try:
        async with make_sessionmaker(engine)() as s:
            rows = (await s.execute(sa.select(MetricRollup))).scalars()
            return {
                (r.trial_id, r.group, r.name, r.level, r.start): series_rollup.Summary(
                    r.min_step, r.min_value, r.max_step, r.max_value, r.last_step, r.last_value
                )
                for r in rows
            }
    finally:
        await engine.dispose()


async def test_up_down_up_and_backfill(master: Master, db_url: str) -> None:
    tables, diff = await _look(db_url)  # the master migrated it to the head
    assert "metric_rollups" in tables and diff == []
    # Reports stored through the API (with the rollups ingest writes), then the table dropped:
    # going up again must rebuild exactly what ingest wrote.
    t, _ = await _trials(master)
    await _report(
        master, t, *(report("training", s, {"loss": s % 7, "x": "NaN"}) for s in range(90))
    )
    await _report(master, t, report("validation", 90, {"loss": 0.5}))
    await _report(
        master, t, report("wide", 1, {f"m{i}": 1 for i in range(series_rollup.MAX_NAMES + 1)})
    )
    written = await _rollups(db_url)
    assert len(written) > 8 * 2
    assert any(key[3] == series_rollup.MARKER_LEVEL for key in written)
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0015")
    tables, _ = await _look(db_url)
    assert "metric_rollups" not in tables
    await upgrade(db_url)
    tables, diff = await _look(db_url)
    assert "metric_rollups" in tables and diff == []
    assert await _rollups(db_url) == written
