"""Migration 0020 (the instances provisioners launched, their price and life) goes up, down and
up again on SQLite and PostgreSQL, agrees with the models, and keeps one row per pool and
instance id."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from controlplane.db.session import make_engine, upgrade
from tests.controlplane.db.migration_support import downgrade, look

TABLES = {"provisioner_instances"}


def _tables(inspector: sa.Inspector) -> set[str]:
    return set(inspector.get_table_names()) & TABLES


async def _exec(url: str, *statements: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            rows: list[tuple[object, ...]] = []
            for sql in statements:
                result = await conn.execute(sa.text(sql))
                rows = [tuple(r) for r in result.all()] if result.returns_rows else []
            return rows
    finally:
        await engine.dispose()


async def test_up_down_up(db_url: str) -> None:
    # Up to 0020 only: later revisions are other changes' to test (their tables show in the
    # models' diff while they are missing, so only this table's part of the diff is checked).
    await upgrade(db_url, "0020")
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES
    assert [d for d in diff if "provisioner_instances" in repr(d)] == []
    await downgrade(db_url, "0019")
    tables, _ = await look(db_url, _tables)
    assert tables == set()
    await upgrade(db_url, "0020")
    tables, diff = await look(db_url, _tables)
    assert tables == TABLES
    assert [d for d in diff if "provisioner_instances" in repr(d)] == []


async def test_one_row_per_pool_and_instance(db_url: str) -> None:
    await upgrade(db_url)
    row = (
        "INSERT INTO provisioner_instances (pool, instance_id, agent_name, offer_key, "
        "instance_type, spot, slots, price_per_hour, launched_at, ended_at) VALUES "
        "('{pool}', 'i-1', 'i-1', 'g5.xlarge@subnet-a/spot', 'g5.xlarge', true, 1, 0.4, "
        "'2026-01-01 00:00:00', NULL)"
    )
    await _exec(db_url, row.format(pool="gpu"), row.format(pool="other"))
    with pytest.raises(sa.exc.IntegrityError):
        await _exec(db_url, row.format(pool="gpu"))
    assert await _exec(db_url, "SELECT count(*) FROM provisioner_instances") == [(2,)]
