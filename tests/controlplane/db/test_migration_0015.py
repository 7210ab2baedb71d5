"""Migration 0015 (trial_hparams) goes down and up again on SQLite and PostgreSQL, fills the
table from the trials already there, and agrees with the models."""

from __future__ import annotations

import asyncio
import json

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade
from controlplane.domain.hparam_values import flatten_hparams
from tests.conftest import Master
from tests.support import webui_seed


async def _read(url: str) -> tuple[set[tuple[object, ...]] | None, list[object]]:
    def read(conn: sa.Connection) -> tuple[set[tuple[object, ...]] | None, list[object]]:
        diff = list(compare_metadata(MigrationContext.configure(conn), Base.metadata))
        if "trial_hparams" not in sa.inspect(conn).get_table_names():
            return None, diff
        rows = conn.execute(
            sa.text("SELECT trial_id, experiment_id, name, number, text FROM trial_hparams")
        )
        return {tuple(r) for r in rows}, diff

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(read)
    finally:
        await engine.dispose()


async def _expected(url: str) -> set[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            trials = (
                await conn.execute(sa.text("SELECT id, experiment_id, hparams FROM trials"))
            ).all()
    finally:
        await engine.dispose()
    out = set()
    for tid, eid, hparams in trials:
        hparams = hparams if isinstance(hparams, dict) else json.loads(hparams)
        out |= {(tid, eid, v.name, v.number, v.text) for v in flatten_hparams(hparams)}
    return out


async def test_down_up_backfills(master: Master, db_url: str) -> None:
    owner = (await master.client.get("/api/v1/me", headers=master.user)).json()["user"]["id"]
    await webui_seed.seed(
        db_url,
        owner_id=owner,
        experiments=3,
        trials_per=2,
        hparams_of=lambda i, j: {"opt": {"lr": 0.1 * (i + 1), "name": "sgd"}, "bn": j == 0},
    )
    want = await _expected(db_url)
    assert len(want) == 3 * 2 * 3
    seeded, diff = await _read(db_url)
    assert seeded == want and diff == []
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0014")
    gone, _ = await _read(db_url)
    assert gone is None
    await upgrade(db_url)
    backfilled, diff = await _read(db_url)
    assert backfilled == want and diff == []
