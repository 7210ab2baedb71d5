"""Migration 0008 (experiments.searcher_snapshot; trials.paused_by_searcher,
best_searcher_metric and one trial per (experiment, request id)) goes up, down and up again on
SQLite and PostgreSQL, keeps the rows it finds, and agrees with the models."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from controlplane.db.base import Base
from controlplane.db.session import alembic_config, make_engine, upgrade

NEW = {
    ("experiments", "searcher_snapshot"),
    ("experiments", "searcher_token"),
    ("trials", "paused_by_searcher"),
    ("trials", "best_searcher_metric"),
}


async def _look(url: str) -> tuple[set[tuple[str, str]], list[object]]:
    def look(conn: sa.Connection) -> tuple[set[tuple[str, str]], list[object]]:
        insp = sa.inspect(conn)
        cols = {(t, c["name"]) for t in ("experiments", "trials") for c in insp.get_columns(t)}
        return cols, compare_metadata(MigrationContext.configure(conn), Base.metadata)

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def _execute(url: str, *sql: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            out: list[tuple[object, ...]] = []
            for statement in sql:
                result = await conn.execute(sa.text(statement))
                out = [tuple(r) for r in result.all()] if result.returns_rows else []
            return out
    finally:
        await engine.dispose()


_SEED_ROWS = (
    "INSERT INTO users (id, username, password_hash, admin, active, created_at, modified_at)"
    " VALUES (100, 'old', '', false, true, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
    "INSERT INTO workspaces (id, name, user_id, immutable, archived, created_at)"
    " VALUES (100, 'w', 100, false, false, CURRENT_TIMESTAMP)",
    "INSERT INTO projects (id, workspace_id, name, key, description, user_id, immutable,"
    " archived, created_at) VALUES (100, 100, 'p', 'P', '', 100, false, false,"
    " CURRENT_TIMESTAMP)",
    "INSERT INTO experiments (id, project_id, owner_id, name, description, notes, labels, state,"
    " config, original_config, searcher_type, resource_pool, archived, job_id, start_time)"
    " VALUES (7, 100, 100, 'e', '', '', '[]', 'ACTIVE', '{}', '', 'single', 'default', false,"
    " 'job-7', CURRENT_TIMESTAMP)",
    "INSERT INTO tasks (task_id, task_type, slots, single_node, owner_id, start_time)"
    " VALUES ('7.a', 'TRIAL', 1, false, 100, CURRENT_TIMESTAMP)",
    "INSERT INTO trials (id, experiment_id, task_id, request_id, state, hparams, seed, restarts,"
    " run_id, total_batches, runner_state, start_time)"
    " VALUES (3, 7, '7.a', 'a', 'ACTIVE', '{}', 1, 0, 0, 0, '', CURRENT_TIMESTAMP)",
)


async def test_up_down_up(db_url: str) -> None:
    await upgrade(db_url, "0007")
    await _execute(db_url, *_SEED_ROWS)
    await upgrade(db_url, "0008")
    columns, diff = await _look(db_url)
    assert columns >= NEW
    # Later revisions add their own columns and indexes to these tables: only 0008's are judged
    # here (each later revision's test checks its own, and the head against the models).
    mine = [d for d in diff if "request_id" in repr(d) or any(c in repr(d) for _, c in NEW)]
    assert mine == []
    rows = await _execute(
        db_url, "SELECT id, paused_by_searcher, best_searcher_metric, request_id FROM trials"
    )
    assert [(r[0], bool(r[1]), r[2], r[3]) for r in rows] == [(3, False, None, "a")]
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0007")
    columns, _ = await _look(db_url)
    assert not NEW & columns
    await upgrade(db_url, "0008")
    columns, _ = await _look(db_url)
    assert columns >= NEW


async def test_a_request_id_is_one_trial_per_experiment(db_url: str) -> None:
    await upgrade(db_url, "0008")
    await _execute(db_url, *_SEED_ROWS)
    await _execute(
        db_url,
        "INSERT INTO tasks (task_id, task_type, slots, single_node, owner_id, start_time)"
        " VALUES ('7.b', 'TRIAL', 1, false, 100, CURRENT_TIMESTAMP)",
    )
    with pytest.raises(sa.exc.IntegrityError):
        await _execute(
            db_url,
            "INSERT INTO trials (experiment_id, task_id, request_id, state, hparams, seed,"
            " restarts, run_id, total_batches, runner_state, paused_by_searcher, start_time)"
            " VALUES (7, '7.b', 'a', 'ACTIVE', '{}', 1, 0, 0, 0, '', false, CURRENT_TIMESTAMP)",
        )
