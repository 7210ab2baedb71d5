"""The searcher loop: events from trials in, the searcher's operations applied, its state saved.

Everything happens inside the caller's transaction: the event (a validation, an early exit, a
trial's end), the searcher's decision, the trials that decision creates or stops, and the
searcher's snapshot commit together or not at all. A master killed at any point therefore
restarts with a snapshot that matches the trials in the database, and the same search goes on.
The experiment's row is locked first (SELECT ... FOR UPDATE on PostgreSQL; SQLite serialises
writers), so two reports of one experiment never decide from the same snapshot.

`finish_if_done` is the one place where an experiment reaches its terminal state.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import ARRAY, bindparam, event, func, insert, literal, select, true
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, SessionTransaction

from controlplane.db.models import Allocation, Experiment, Task, TaskLog, Trial, TrialHparam
from controlplane.domain.hparam_values import flatten_hparams
from controlplane.domain.search_plan import (
    SEARCHING,
    ExperimentStop,
    NewTrial,
    TrialChange,
    TrialView,
    cancel_trial,
    check_concurrency,
    close_trial,
    exit_events,
    plan_op,
)
from controlplane.domain.searcher import (
    Create,
    MetricMissing,
    Searcher,
    TrialCreated,
    TrialExitedEarly,
    make_searcher,
    restore_searcher,
)
from controlplane.domain.states import RunState
from controlplane.domain.trial_exit import experiment_after_trials
from controlplane.services import allocations, history
from controlplane.services.dialect import built, insert_ignoring_duplicates, name_of
from controlplane.services.reschedule import mark_reschedule

log = logging.getLogger("controlplane.search")
S = RunState


# SQLite has no row locks, and its driver runs the reads before a transaction's first write
# outside that transaction: two reports of one experiment would both decide from the same
# snapshot. So on SQLite the master itself holds a lock per experiment until the transaction
# that took it ends (the row lock does this on PostgreSQL).
_SQLITE_LOCKS: dict[tuple[int, int], asyncio.Lock] = {}
_HELD = "search_locks"  # session.info: the experiment locks its transaction holds


async def _hold_sqlite_lock(session: AsyncSession, experiment_id: int) -> None:
    held: dict[int, asyncio.Lock] = session.info.setdefault(_HELD, {})
    if experiment_id in held:
        return  # this transaction holds it already
    key = (id(asyncio.get_running_loop()), experiment_id)
    lock = _SQLITE_LOCKS.setdefault(key, asyncio.Lock())
    await lock.acquire()
    held[experiment_id] = lock


# One listener for every session, registered once: listening on each session that takes a
# lock cost more than the rest of the lock (SQLAlchemy builds a dispatcher per instance).
@event.listens_for(Session, "after_transaction_end")
def _release_sqlite_locks(session: Session, transaction: SessionTransaction) -> None:
    held = session.info.get(_HELD)
    if held and transaction.parent is None:
        for lock in held.values():
            lock.release()
        held.clear()


async def trial_with_locked_experiment(
    session: AsyncSession, trial_id: int
) -> tuple[Trial, Experiment] | None:
    """A trial and its experiment, the experiment locked as by `lock_experiment`, both read
    afresh. PostgreSQL does it in one statement (FOR UPDATE OF experiments); SQLite's lock is
    the master's own, taken before the experiment is read, and the trial names which: two."""
    if session.get_bind().dialect.name == "sqlite":
        trial = await session.scalar(_TRIAL, {"trial_id": trial_id})
        if trial is None:
            return None
        exp = await lock_experiment(session, trial.experiment_id)
        return (trial, exp) if exp is not None else None
    row = (await session.execute(_TRIAL_LOCKING_EXPERIMENT, {"trial_id": trial_id})).first()
    return (row[0], row[1]) if row is not None else None


# The statements of every report and every trial's end, built once: SQLAlchemy memoizes a
# statement's cache key on the object, so a prebuilt one skips its construction and its key.
_TRIAL_LOCKING_EXPERIMENT = (
    select(Trial, Experiment)
    .join(Experiment, Experiment.id == Trial.experiment_id)
    .where(Trial.id == bindparam("trial_id"))
    .with_for_update(of=Experiment)
    .execution_options(populate_existing=True)
)
# A select, not `session.get`: get's identity-map path cost twice the read.
_TRIAL = (
    select(Trial).where(Trial.id == bindparam("trial_id")).execution_options(populate_existing=True)
)
_LOCK_EXPERIMENT = (
    select(Experiment)
    .where(Experiment.id == bindparam("experiment_id"))
    .with_for_update()
    .execution_options(populate_existing=True)
)


async def lock_experiment(session: AsyncSession, experiment_id: int) -> Experiment | None:
    """The experiment, locked until this transaction ends and read afresh."""
    if session.get_bind().dialect.name == "sqlite":
        await _hold_sqlite_lock(session, experiment_id)
    return await session.scalar(_LOCK_EXPERIMENT, {"experiment_id": experiment_id})


def _seed(config: dict[str, Any]) -> int:
    return int((config.get("reproducibility") or {}).get("experiment_seed") or 0)


def new_searcher(config: dict[str, Any]) -> Searcher:
    """SearcherConfigError (a 400) for what cannot be searched."""
    check_concurrency(config["searcher"])
    return make_searcher(
        dict(config["searcher"]), dict(config.get("hyperparameters") or {}), _seed(config)
    )


async def start(session: AsyncSession, exp: Experiment, searcher: Any, now: datetime) -> None:
    """The experiment's first trials (it has just been added and flushed)."""
    await _run(session, exp, searcher, searcher.initial_operations(), (), now)


def is_searched(exp: Experiment) -> bool:
    """Whether a searcher runs the experiment (older experiments made every trial up front;
    a continued one runs its trials to their end)."""
    return exp.searcher_token is not None


# The searcher each experiment's row names, as this process last wrote it: restoring a big
# search from its snapshot on every report would cost more than the decision itself. A write
# that does not commit leaves the row naming another token, so its searcher is never reused.
# With each searcher, the snapshot its row holds: a decision that leaves it unchanged (most
# validation reports of a random search) writes nothing. Snapshots are built of fresh
# containers, so the one kept here is not changed behind its back.
_LIVE: dict[int, tuple[str, Searcher, dict[str, Any]]] = {}


async def _searcher_of(
    session: AsyncSession, exp: Experiment
) -> tuple[Searcher, dict[str, Any] | None]:
    cached = _LIVE.pop(exp.id, None)
    if cached is not None and cached[0] == exp.searcher_token:
        return cached[1], cached[2]
    snapshot = await session.scalar(
        select(Experiment.searcher_snapshot).where(Experiment.id == exp.id)
    )
    searcher = restore_searcher(
        dict(exp.config["searcher"]),
        dict(exp.config.get("hyperparameters") or {}),
        dict(snapshot or {}),
    )
    return searcher, None  # restored: written again once, whatever the decision


def forget(exp: Experiment) -> None:
    """The experiment no longer has a searcher (it is continued without one)."""
    _LIVE.pop(exp.id, None)
    exp.searcher_snapshot = None
    exp.searcher_token = None


async def feed(
    session: AsyncSession, exp: Experiment, events: Iterable[object], now: datetime
) -> None:
    """Tell the searcher of an experiment (locked by the caller) what happened."""
    if not is_searched(exp) or S(exp.state) not in SEARCHING:
        return
    searcher, stored = await _searcher_of(session, exp)
    await _run(session, exp, searcher, (), events, now, stored)


async def _run(
    session: AsyncSession,
    exp: Experiment,
    searcher: Searcher,
    ops: Iterable[object],
    events: Iterable[object],
    now: datetime,
    stored: dict[str, Any] | None = None,
) -> None:
    """`stored`: the snapshot the experiment's row holds, if known (None: write it)."""
    pending_ops = deque(ops)
    pending_events = deque(events)
    while pending_ops or pending_events:
        while pending_ops:
            pending_events.extend(await _apply(session, exp, pending_ops.popleft(), now))
        if pending_events and S(exp.state) in SEARCHING:
            event = pending_events.popleft()
            try:
                pending_ops.extend(searcher.on_event(event))  # type: ignore[arg-type]
            except MetricMissing as exc:
                task_id = f"{exp.id}.{getattr(event, 'request_id', '')}"
                await fail(session, exp, str(exc), now, task_id=task_id)
        else:
            pending_events.clear()
    snapshot = searcher.snapshot()
    if snapshot != stored or exp.searcher_token is None:
        exp.searcher_snapshot = snapshot
        exp.searcher_token = uuid.uuid4().hex
    _LIVE[exp.id] = (exp.searcher_token, searcher, snapshot)
    progress = float(searcher.progress())
    if exp.progress != progress:
        exp.progress = progress
    await finish_if_done(session, exp, now)


async def _views(
    session: AsyncSession, exp: Experiment, request_ids: list[str]
) -> dict[str, tuple[Trial, bool]]:
    rows = (
        await session.execute(
            select(Trial, Allocation.allocation_id)
            .outerjoin(
                Allocation,
                (Allocation.task_id == Trial.task_id) & Allocation.end_time.is_(None),
            )
            .where(Trial.experiment_id == exp.id, Trial.request_id.in_(request_ids))
        )
    ).all()
    return {trial.request_id: (trial, alloc is not None) for trial, alloc in rows}


def _view(trial: Trial, running: bool) -> TrialView:
    return TrialView(trial.request_id, S(trial.state), running, trial.paused_by_searcher)


async def _apply(session: AsyncSession, exp: Experiment, op: object, now: datetime) -> list[object]:
    if isinstance(op, Create):
        # Planned as if its trial were not made; the task's insert then finds out (a replayed
        # Create finds its trial's task made already, and plan_op would have said None).
        change = plan_op(S(exp.state), op, None)
        if isinstance(change, NewTrial) and await _create(session, exp, change, now):
            return [TrialCreated(change.request_id)]
        return []
    request_id = getattr(op, "request_id", None)  # None: Shutdown, which names no trial
    trial, running = None, False
    if request_id is not None:
        trial, running = (await _views(session, exp, [request_id])).get(request_id, (None, False))
    change = plan_op(S(exp.state), op, _view(trial, running) if trial is not None else None)
    if isinstance(change, TrialChange):
        assert trial is not None
        return await _change(session, trial, change, now)
    if isinstance(change, ExperimentStop):
        await _stop_experiment(session, exp, change, now)
    return []


_TASKS = Task.__table__
_TRIALS = Trial.__table__
# A trial's task id is its experiment's id and its request id: a task of that id that exists
# already is the trial of a replayed Create (a task and its trial are written together).
_INSERT_TASK = "search.insert_task"  # its key in `dialect.built`
_INSERT_TRIAL = insert(_TRIALS).returning(_TRIALS.c.id)
_INSERT_TASK_AND_TRIAL = "search.insert_task_and_trial"


def _insert_task_and_trial() -> Any:
    """PostgreSQL: the task's insert (nothing if it exists), its trial's and the trial's
    trial_hparams rows', in one statement (data-modifying WITHs): two round trips fewer per new
    trial. The trial is selected from the
    task's RETURNING, so a replayed Create inserts neither and returns no row. The columns'
    Python defaults go in as with any Core insert (`from_select` includes them)."""
    t, r = _TASKS.c, _TRIALS.c

    def param(column: Any) -> Any:
        return bindparam(column.name, type_=column.type)

    start = param(t.start_time)
    task = (
        postgresql.insert(_TASKS)
        .values(
            task_id=param(t.task_id),
            task_type=param(t.task_type),
            job_id=param(t.job_id),
            slots=param(t.slots),
            single_node=param(t.single_node),
            owner_id=param(t.owner_id),
            start_time=start,
        )
        .on_conflict_do_nothing(index_elements=["task_id"])
        .returning(t.task_id)
        .cte("made_task")
    )
    columns = [r.experiment_id, r.request_id, r.state, r.hparams, r.seed]
    names = {"task_id", "start_time", *(c.name for c in columns)}
    # The columns' Python defaults as literals: `from_select`'s own (bound parameters) are not
    # filled in when the statement also holds the task's insert.
    defaults = [
        c
        for c in _TRIALS.c
        if c.name not in names and c.default is not None and c.default.is_scalar
    ]
    trial = (
        insert(_TRIALS)
        .from_select(
            ["task_id", "start_time", *(c.name for c in columns), *(c.name for c in defaults)],
            select(
                task.c.task_id,
                start,
                *(param(c) for c in columns),
                *(literal(c.default.arg, type_=c.type) for c in defaults),  # type: ignore[union-attr]
            ),
            include_defaults=False,
        )
        .returning(r.id)
        .cte("made_trial")
    )
    # Its trial_hparams rows, from three arrays (none: the insert adds no row).
    h = _HPARAMS.c
    values = (
        func.unnest(
            bindparam("hp_name", type_=ARRAY(h.name.type)),
            bindparam("hp_number", type_=ARRAY(h.number.type)),
            bindparam("hp_text", type_=ARRAY(h.text.type)),
        )
        .table_valued("name", "number", "text")
        .render_derived()
    )
    hparams = (
        insert(_HPARAMS)
        .from_select(
            ["trial_id", "experiment_id", "name", "number", "text"],
            select(
                trial.c.id, param(r.experiment_id), values.c.name, values.c.number, values.c.text
            ).select_from(trial.join(values, true())),  # each row with the one trial
            include_defaults=False,
        )
        .cte("made_hparams")
    )
    return select(trial.c.id).add_cte(hparams)


_HPARAMS = TrialHparam.__table__
_INSERT_HPARAMS = insert(_HPARAMS)


async def _create(session: AsyncSession, exp: Experiment, new: NewTrial, now: datetime) -> bool:
    """The task and its trial, written at once with Core inserts: no ORM objects to track and
    no flush of the session to learn the trial's id (the insert returns it). False: the trial
    was made already (its task's insert did nothing), nothing is written.

    Read and written without flushing the session: its pending changes (the trial that just
    ended, its allocation) cannot make another request's trial, and they go out in the
    commit's one flush instead of a flush of their own here."""
    resources = exp.config.get("resources") or {}
    task_id = f"{exp.id}.{new.request_id}"
    with session.no_autoflush:
        made = await _insert_trial(session, exp, new, task_id, resources, now)
    if made:
        mark_reschedule(session, exp.resource_pool)
    return made


async def _insert_trial(
    session: AsyncSession,
    exp: Experiment,
    new: NewTrial,
    task_id: str,
    resources: dict[str, Any],
    now: datetime,
) -> bool:
    task = {
        "task_id": task_id,
        "task_type": "TRIAL",
        "job_id": exp.job_id,
        "slots": int(resources.get("slots_per_trial") or 1),
        "single_node": bool(resources.get("is_single_node")),
        "owner_id": exp.owner_id,
        "start_time": now,
    }
    trial = {
        "experiment_id": exp.id,
        "task_id": task_id,
        "request_id": new.request_id,
        "state": new.state.value,
        "hparams": new.hparams,
        "seed": new.seed,
        "start_time": now,
    }
    flat = flatten_hparams(new.hparams)
    if name_of(session) == "postgresql":
        stmt = built(session, _INSERT_TASK_AND_TRIAL, lambda _: _insert_task_and_trial())
        hp = {
            "hp_name": [v.name for v in flat],
            "hp_number": [v.number for v in flat],
            "hp_text": [v.text for v in flat],
        }
        trial_id = await session.scalar(stmt, {**task, **trial, **hp})
        if trial_id is None:
            return False  # a replayed Create: its trial is there
        flat = []  # inserted with it
    else:
        stmt = built(
            session,
            _INSERT_TASK,
            lambda _: insert_ignoring_duplicates(session, _TASKS, ["task_id"]).returning(
                _TASKS.c.task_id
            ),
        )
        if await session.scalar(stmt, task) is None:
            return False  # a replayed Create: its trial is there
        trial_id = await session.scalar(_INSERT_TRIAL, trial)
    hparam_rows = [
        {
            "trial_id": trial_id,
            "experiment_id": exp.id,
            "name": v.name,
            "number": v.number,
            "text": v.text,
        }
        for v in flat
    ]
    if hparam_rows:  # one executemany: the list filters read these rows, not the JSON
        await session.execute(_INSERT_HPARAMS, hparam_rows)
    history.record_created(session, "trial", str(trial_id), new.state, now, "the searcher")
    return True


async def _live_allocation(session: AsyncSession, trial: Trial) -> str | None:
    return await session.scalar(
        select(Allocation.allocation_id)
        .where(Allocation.task_id == trial.task_id, Allocation.end_time.is_(None))
        .limit(1)
    )


async def _change(
    session: AsyncSession, trial: Trial, change: TrialChange, now: datetime
) -> list[object]:
    trial.paused_by_searcher = change.paused_by_searcher
    if change.target is not None:
        history.move_trial(session, trial, change.target, now)
    if change.preempt:
        alloc = await _live_allocation(session, trial)
        if alloc is not None:
            await allocations.request_preemption(
                session, alloc, reason=f"searcher: {change.reason}", now=now
            )
    return exit_events(trial.request_id, S(trial.state), trial.early_exit_reason)


async def _stop_experiment(
    session: AsyncSession, exp: Experiment, stop: ExperimentStop, now: datetime
) -> None:
    history.move_experiment(session, exp, stop.target, now)
    alive = (
        await session.execute(
            select(Trial, Allocation.allocation_id)
            .outerjoin(
                Allocation,
                (Allocation.task_id == Trial.task_id) & Allocation.end_time.is_(None),
            )
            .where(
                Trial.experiment_id == exp.id,
                Trial.state.in_([S.ACTIVE.value, S.PAUSED.value]),
            )
        )
    ).all()
    plan = cancel_trial if stop.cancel_trials else close_trial
    for trial, alloc in alive:
        change = plan(_view(trial, alloc is not None), stop.reason)
        if change is not None:
            await _change(session, trial, change, now)
    mark_reschedule(session, exp.resource_pool)


async def exit_early(
    session: AsyncSession, exp: Experiment, trial: Trial, reason: str, now: datetime
) -> None:
    """The trial reported an early exit: the searcher hears of it, and the trial is done (a
    running one is asked to exit; `kills` kills it if it has not within
    EARLY_EXIT_KILL_SECONDS)."""
    alloc = await _live_allocation(session, trial)
    change = close_trial(_view(trial, alloc is not None), f"the trial exited early ({reason})")
    closed = await _change(session, trial, change, now) if change is not None else []
    await feed(session, exp, [TrialExitedEarly(trial.request_id, reason), *closed], now)


async def trial_ended(
    session: AsyncSession, trial: Trial, now: datetime, exp: Experiment | None = None
) -> None:
    """A trial reached a terminal state: the searcher hears of it, and the experiment ends
    when it has nothing left to run. `exp`: its experiment, locked already by the caller."""
    exp = exp or await lock_experiment(session, trial.experiment_id)
    if exp is None:
        return
    events = exit_events(trial.request_id, S(trial.state), trial.early_exit_reason)
    if is_searched(exp) and S(exp.state) in SEARCHING:
        await feed(session, exp, events, now)
    else:
        await finish_if_done(session, exp, now)


async def fail(
    session: AsyncSession, exp: Experiment, message: str, now: datetime, *, task_id: str
) -> None:
    """The search cannot go on (e.g. a validation lacks the searcher's metric): say so in the
    task's logs, then stop the experiment with an error instead of waiting forever."""
    log.warning("experiment %s: %s", exp.id, message)
    await session.execute(
        insert(TaskLog),
        [
            {
                "task_id": task_id,
                "timestamp": now,
                "level": "LOG_LEVEL_ERROR",
                "source": "master",
                "log": f"experiment {exp.id} stops with an error: {message}\n",
            }
        ],
    )
    if not is_searched(exp) or S(exp.state) not in SEARCHING:
        return
    history.note(session, "experiment", str(exp.id), exp.state, message, now)
    await _stop_experiment(session, exp, ExperimentStop(S.STOPPING_ERROR, True, message), now)
    await finish_if_done(session, exp, now)


async def finish_if_done(session: AsyncSession, exp: Experiment, now: datetime) -> None:
    """The experiment's terminal transition, once no trial of it runs. An experiment with a
    searcher ends only after the searcher has shut down (it is STOPPING_* then)."""
    searched = is_searched(exp)
    if searched and S(exp.state) in SEARCHING:
        return  # skips a read of every trial per report of a search that goes on
    states = [
        S(s)
        for s in await session.scalars(select(Trial.state).where(Trial.experiment_id == exp.id))
    ]
    target = experiment_after_trials(S(exp.state), states, searched=searched)
    if target is not None:
        history.move_experiment(session, exp, target, now)
