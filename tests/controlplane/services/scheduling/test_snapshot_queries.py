"""What a scheduling pass reads: the pool's queue, found from indexes, never by reading every
task the cluster has run (a long-lived master keeps them all)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from controlplane.db import models as m
from controlplane.db.session import make_engine, make_sessionmaker, transaction, upgrade
from controlplane.services.scheduling.snapshot import (
    _PENDING,
    _RUNNING,
    _STILL_PENDING,
    load_pool_rows,
    still_pending,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _plan(db: Path, statement: sa.Executable, params: dict[str, object]) -> list[str]:
    engine = sa.create_engine(f"sqlite:///{db}")
    steps: list[str] = []

    @sa.event.listens_for(engine, "before_cursor_execute", retval=True)
    def explain(conn, cursor, sql, parameters, context, many):  # type: ignore[no-untyped-def]
        return "EXPLAIN QUERY PLAN " + sql, parameters

    try:
        with engine.connect() as conn:
            steps = [row[3] for row in conn.execute(statement, params)]
    finally:
        engine.dispose()
    return steps


@pytest.mark.parametrize(
    ("statement", "params"),
    [
        (_PENDING, {"pool": "default"}),
        (_RUNNING, {"pool": "default"}),
        (_STILL_PENDING, {"pool": "default", "task_ids": ["a", "b"]}),
    ],
    ids=["pending", "running", "still-pending"],
)
async def test_a_pass_reads_no_table_whole(
    tmp_path: Path, statement: sa.Executable, params: dict[str, object]
) -> None:
    db = tmp_path / "master.db"
    await upgrade(f"sqlite+aiosqlite:///{db}")
    steps = _plan(db, statement, params)
    assert steps and not [s for s in steps if s.startswith("SCAN")], steps


async def _seed(url: str) -> None:
    engine = make_engine(url)
    try:
        async with transaction(make_sessionmaker(engine)) as s:
            s.add(m.User(id=900, username="q", created_at=T0, modified_at=T0))
            await s.flush()

            def command(task_id: str, pool: str = "default", ended: bool = False) -> None:
                s.add(
                    m.Task(
                        task_id=task_id, task_type="COMMAND", job_id=f"j-{task_id}", slots=1,
                        owner_id=900, start_time=T0, end_time=T0 if ended else None,
                    )
                )  # fmt: skip
                s.add(
                    m.Job(
                        job_id=f"j-{task_id}", job_type="COMMAND", owner_id=900,
                        resource_pool=pool, queue_position=1, submitted_at=T0,
                    )
                )  # fmt: skip

            for i in range(50):
                command(f"done-{i}", ended=True)
            command("open")
            command("elsewhere", pool="other")
            command("placed")
            await s.flush()
            s.add(
                m.Allocation(
                    allocation_id="placed.1", task_id="placed", state="RUNNING",
                    token_hash="t", slots=1, resource_pool="default",
                    placement={"a": [0]}, start_time=T0,
                )
            )  # fmt: skip
    finally:
        await engine.dispose()


async def test_the_queue_is_the_open_commands_of_the_pool(db_url: str) -> None:
    await upgrade(db_url)
    await _seed(db_url)
    engine = make_engine(db_url)
    try:
        async with transaction(make_sessionmaker(engine)) as s:
            rows = await load_pool_rows(s, "default")
            assert [p.task_id for p in rows.pending] == ["open"]
            assert [r.task_id for r in rows.running] == ["placed"]
            assert await still_pending(s, "default", ["open", "placed", "done-1"]) == {"open": 0}
    finally:
        await engine.dispose()
