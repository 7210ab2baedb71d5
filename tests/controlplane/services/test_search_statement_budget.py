"""A searched trial's bookkeeping costs the master a bounded number of SQL statements, on both
databases: its validation report and its allocation's end (which makes the next trial).

The search bookkeeping benchmark (benchmarks/search_bookkeeping.py) is bounded by the master's
CPU per trial, most of it spent per statement. Before the cuts a report took 8 statements (a
second read for the owner, a read of the stored validations, two UPDATEs of the trial and a
write of an unchanged searcher snapshot); the budgets hold what was reached.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, func, select

from controlplane.db.models import StateChange

# `env` is test_search_loop's fixture (both databases), shared by importing it.
from tests.controlplane.services.test_search_loop import Env, alive, config, env

__all__ = ["env"]

# The trial, the experiment's lock, the insert, the chart's rollups (one upsert for the report's
# eight bucket levels), the trial's UPDATE. PostgreSQL reads the trial and locks its experiment in
# one statement (SQLite's lock is the master's, taken between the two reads).
REPORT_STATEMENTS = {"sqlite": 5, "postgresql": 4}
# The allocation and its task with the trial, the experiment's lock, the next trial's task (an
# insert that does nothing if a replayed Create made it already: no read first) and trial, its
# sampled hyperparameters (trial_hparams, one INSERT, which the experiment list's hp filter
# reads), one INSERT of the three state changes, then the UPDATEs of the allocation, the trial
# and the searcher's row. 12 before the state changes were batched and the next trial written
# with Core (no flush of its own, no id read back per state change); 11 before the read of
# whether the next trial exists went into its task's insert. PostgreSQL inserts the task and the
# trial and its trial_hparams rows in one statement (data-modifying WITHs), and the three UPDATEs
# with the state changes in another (services/chained_flush.py; 8 before).
END_STATEMENTS = {"sqlite": 10, "postgresql": 5}


@contextmanager
def counting(e: Env) -> Iterator[list[str]]:
    engine = e.maker.kw["bind"].sync_engine
    seen: list[str] = []

    def statement(_conn: Any, _cursor: Any, stmt: str, *_: Any) -> None:
        # The caller's user is the test's load (a live master's auth has it already).
        if not stmt.startswith("SELECT users."):
            seen.append(stmt)

    event.listen(engine, "before_cursor_execute", statement)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", statement)


async def test_a_searched_trial_costs_a_bounded_number_of_statements(env: Env) -> None:
    exp_id = await env.create(
        config({"name": "random", "max_trials": 6, "max_concurrent_trials": 2})
    )
    dialect = env.maker.kw["bind"].dialect.name
    first = alive(await env.trials(exp_id))[0]
    await env.run_to_end(first, loss=0.5)  # the searcher is restored once, then kept
    for loss in (0.4, 0.3, 0.2):
        trial = alive(await env.trials(exp_id))[0]
        alloc = await env.start(trial)
        with counting(env) as report:
            await env.validate(trial, 10, {"loss": loss})
        with counting(env) as end:
            await env.exit(alloc)
        assert len(report) <= REPORT_STATEMENTS[dialect], report
        assert len(end) <= END_STATEMENTS[dialect], end
        assert len([s for s in end if "INSERT INTO state_changes" in s]) == 1, end
        if dialect == "postgresql":
            assert not [s for s in end if s.startswith("UPDATE")], end
        assert not [s for s in report if s.startswith("UPDATE experiments")], report
    rows = await env.trials(exp_id)
    assert len(rows) == 6 and len(alive(rows)) == 2
    assert [t.best_searcher_metric for t in rows[:4]] == [0.5, 0.4, 0.3, 0.2]
    assert all(t.total_batches == 10 for t in rows[:4])
    # The batched history is all there: each ended trial's creation and end, in order.
    async with env.maker() as s:
        changes = (
            await s.execute(
                select(StateChange.from_state, StateChange.to_state)
                .where(StateChange.entity == "trial", StateChange.entity_id == str(rows[3].id))
                .order_by(StateChange.id)
            )
        ).all()
        ended = await s.scalar(
            select(func.count())
            .select_from(StateChange)
            .where(StateChange.entity == "allocation", StateChange.to_state == "TERMINATED")
        )
    assert [tuple(c) for c in changes] == [(None, "ACTIVE"), ("ACTIVE", "COMPLETED")]
    assert ended == 4


async def test_a_retried_validation_is_stored_once_and_not_news(env: Env) -> None:
    exp_id = await env.create(
        config({"name": "random", "max_trials": 3, "max_concurrent_trials": 1})
    )
    (trial,) = alive(await env.trials(exp_id))
    await env.start(trial)
    await env.validate(trial, 10, {"loss": 0.5})
    before = await env.snapshot(exp_id)
    await env.validate(trial, 10, {"loss": 0.5})  # the same key: dropped
    assert await env.snapshot(exp_id) == before
    (again,) = await env.trials(exp_id)
    assert again.best_searcher_metric == 0.5
