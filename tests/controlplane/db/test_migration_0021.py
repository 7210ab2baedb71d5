"""Migration 0021 (generic tasks, detached runs) goes up, down and up again on SQLite and
PostgreSQL, agrees with the models, a generic task's row goes with its task, and external ids
name one experiment, and one trial within it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from controlplane.db.session import make_engine, upgrade
from tests.controlplane.db.migration_support import downgrade, look

TABLE = "generic_tasks"
COLUMNS = {"unmanaged", "external_experiment_id", "external_trial_id", "last_activity"}


def _tables(inspector: sa.Inspector) -> set[str]:
    columns = {c["name"] for t in ("experiments", "trials") for c in inspector.get_columns(t)}
    return (set(inspector.get_table_names()) & {TABLE}) | (columns & COLUMNS)


def _ours(diff: list[object]) -> list[object]:
    # Other lanes' models may be ahead of their migrations while they work: judge this one's.
    return [d for d in diff if any(name in repr(d) for name in (TABLE, *COLUMNS))]


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
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == {TABLE, *COLUMNS} and _ours(diff) == []
    await downgrade(db_url, "0020")
    tables, _ = await look(db_url, _tables)
    assert tables == set()
    await upgrade(db_url)
    tables, diff = await look(db_url, _tables)
    assert tables == {TABLE, *COLUMNS} and _ours(diff) == []


async def test_row_goes_with_its_task(db_url: str) -> None:
    await upgrade(db_url)
    when = "'2026-01-01 00:00:00'"
    await _exec(
        db_url,
        "INSERT INTO users (id, username, password_hash, admin, active, created_at, modified_at) "
        f"VALUES (81, 'generic-user', '', false, true, {when}, {when})",
        "INSERT INTO tasks (task_id, task_type, slots, single_node, owner_id, start_time) "
        f"VALUES ('t-1', 'GENERIC', 0, false, 81, {when})",
        "INSERT INTO tasks (task_id, task_type, slots, single_node, owner_id, start_time) "
        f"VALUES ('t-2', 'GENERIC', 0, false, 81, {when})",
        "INSERT INTO generic_tasks (task_id, config, no_pause) VALUES ('t-1', '{}', false)",
        "INSERT INTO generic_tasks (task_id, parent_id, config, no_pause) "
        "VALUES ('t-2', 't-1', '{}', true)",
    )
    assert await _exec(db_url, "SELECT parent_id FROM generic_tasks WHERE task_id = 't-2'") == [
        ("t-1",)
    ]
    await _exec(db_url, "DELETE FROM tasks WHERE task_id = 't-2'")
    assert await _exec(db_url, "SELECT task_id FROM generic_tasks") == [("t-1",)]


async def test_external_ids_are_unique_where_they_name(db_url: str) -> None:
    await upgrade(db_url)
    when = "'2026-01-01 00:00:00'"
    exp = (
        "INSERT INTO experiments (id, project_id, owner_id, name, description, notes, labels, "
        "state, config, original_config, searcher_type, resource_pool, archived, job_id, "
        "start_time, unmanaged, external_experiment_id) VALUES ({id}, 1, 1, 'x', '', '', '[]', "
        "'ACTIVE', '{{}}', '', 'single', '', false, 'job-{id}', " + when + ", true, {ext})"
    )
    trial = (
        "INSERT INTO trials (experiment_id, task_id, request_id, state, hparams, seed, restarts, "
        "run_id, total_batches, runner_state, paused_by_searcher, start_time, "
        "external_trial_id) VALUES ({exp}, '{task}', '{task}', 'PAUSED', '{{}}', 0, 0, 0, 0, '', "
        "false, " + when + ", {ext})"
    )
    task = (
        "INSERT INTO tasks (task_id, task_type, slots, single_node, owner_id, start_time) "
        "VALUES ('{task}', 'TRIAL', 0, false, 1, " + when + ")"
    )
    await _exec(
        db_url,
        "INSERT INTO users (id, username, password_hash, admin, active, created_at, modified_at) "
        f"VALUES (1, 'owner-x', '', true, true, {when}, {when})",
        "INSERT INTO workspaces (id, name, user_id, immutable, archived, created_at, state) "
        f"VALUES (1, 'ws-x', 1, false, false, {when}, 'UNSPECIFIED')",
        "INSERT INTO projects (id, workspace_id, name, key, description, user_id, immutable, "
        f"archived, created_at) VALUES (1, 1, 'p-x', 'PX', '', 1, false, false, {when})",
        exp.format(id=91, ext="'run-a'"),
        exp.format(id=92, ext="NULL"),
        exp.format(id=93, ext="NULL"),
        *(task.format(task=t) for t in ("91.a", "92.a", "91.b", "91.c", "91.d")),
        trial.format(exp=91, task="91.a", ext="'t'"),
        trial.format(exp=92, task="92.a", ext="'t'"),  # another experiment may reuse it
        trial.format(exp=91, task="91.b", ext="NULL"),
        trial.format(exp=91, task="91.c", ext="NULL"),  # NULLs never collide
    )
    with pytest.raises(sa.exc.IntegrityError):
        await _exec(db_url, exp.format(id=94, ext="'run-a'"))
    with pytest.raises(sa.exc.IntegrityError):
        await _exec(db_url, trial.format(exp=91, task="91.d", ext="'t'"))
