"""State changes go through the transition tables and leave a row in `state_changes`.

Two of the master's intents about an allocation are kept here too, as notes (rows whose state
does not change): a preemption request (its time starts the `preemption_timeout`) and a kill
request (the SIGKILL is re-sent until the containers end, and the end is not the user's error).
They are stored before any signal goes out, so a restarted master carries them on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from datetime import datetime

from sqlalchemy import Exists, bindparam, exists, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Experiment, StateChange, Trial
from controlplane.domain.states import (
    ALLOCATION_TRANSITIONS,
    EXPERIMENT_TRANSITIONS,
    TRIAL_TRANSITIONS,
    AllocationState,
    RunState,
    check_transition,
)
from controlplane.services import chained_flush, webhook_outbox


def change_row(
    entity: str, entity_id: str, old: str | None, new: str, why: str, now: datetime
) -> dict[str, object]:
    """A `state_changes` row as Core's insert takes it."""
    return {
        "entity": entity,
        "entity_id": entity_id,
        "from_state": old,
        "to_state": new,
        "reason": why,
        "at": now,
    }


def _record(
    session: AsyncSession,
    entity: str,
    entity_id: str,
    old: str | None,
    new: str,
    why: str,
    now: datetime,
) -> None:
    row = change_row(entity, entity_id, old, new, why, now)
    rows = session.info.get(_BATCH)
    if rows is not None:
        rows.append(row)
    else:
        session.add(StateChange(**row))


# The rows recorded inside `batched`, not yet written.
_BATCH = "history_batch"
_STATE_CHANGES = StateChange.__table__
_INSERT_STATE_CHANGES = insert(_STATE_CHANGES)  # built once: its cache key is kept with it


@asynccontextmanager
async def batched(session: AsyncSession) -> AsyncIterator[None]:
    """The state changes recorded inside go out as one INSERT when it ends. As ORM objects
    SQLite's driver inserts them one statement each, every one returning an id nothing reads
    (a trial's end records three). Reads of `state_changes` through this module see them; if
    the block fails, they are left in the session as before, for the caller to commit or
    roll back."""
    if _BATCH in session.info:
        yield  # an enclosing block writes them
        return
    session.info[_BATCH] = []
    try:
        yield
    except BaseException:
        session.add_all(StateChange(**row) for row in session.info.pop(_BATCH))
        raise
    await _write_batch(session, with_changes=True)
    del session.info[_BATCH]


async def _write_batch(session: AsyncSession, *, with_changes: bool = False) -> None:
    """`with_changes`: the session's other pending changes may go out in the same statement
    (PostgreSQL: chained_flush), as the block's last writes."""
    rows = session.info.get(_BATCH)
    if with_changes and await chained_flush.flush(session, [(_STATE_CHANGES, rows or [])]):
        del rows[:]
        return
    if rows:
        await session.execute(_INSERT_STATE_CHANGES, list(rows))
        rows.clear()


def record_created(
    session: AsyncSession,
    entity: str,
    entity_id: str,
    state: RunState | AllocationState,
    now: datetime,
    why: str = "created",
) -> None:
    _record(session, entity, entity_id, None, state.value, why, now)


def note(
    session: AsyncSession, entity: str, entity_id: str, state: str, why: str, now: datetime
) -> None:
    """A row for an event that does not change the state (e.g. a preemption request)."""
    _record(session, entity, entity_id, state, state, why, now)


PREEMPT_NOTE = "preempt: "
KILL_NOTE = "kill: "
_CHUNK = 500


def kill_noted(allocation_id_column: object) -> Exists:
    """SQL: whether the master has recorded a kill request for the allocation."""
    return exists().where(
        StateChange.entity == "allocation",
        StateChange.entity_id == allocation_id_column,
        StateChange.reason.startswith(KILL_NOTE, autoescape=True),
    )


def note_preemption(session: AsyncSession, alloc: Allocation, why: str, now: datetime) -> None:
    note(session, "allocation", alloc.allocation_id, alloc.state, PREEMPT_NOTE + why, now)


def note_kill(session: AsyncSession, alloc: Allocation, why: str, now: datetime) -> None:
    note(session, "allocation", alloc.allocation_id, alloc.state, KILL_NOTE + why, now)


async def _first_notes(
    session: AsyncSession, prefix: str, allocation_ids: Collection[str]
) -> dict[str, datetime]:
    await _write_batch(session)  # a note recorded in this block counts
    ids = sorted(set(allocation_ids))
    out: dict[str, datetime] = {}
    for start in range(0, len(ids), _CHUNK):
        rows = await session.execute(
            select(StateChange.entity_id, StateChange.at).where(
                StateChange.entity == "allocation",
                StateChange.entity_id.in_(ids[start : start + _CHUNK]),
                StateChange.reason.startswith(prefix, autoescape=True),
            )
        )
        for entity_id, at in rows.all():
            if entity_id not in out or at < out[entity_id]:
                out[entity_id] = at
    return out


async def kills_requested(
    session: AsyncSession, allocation_ids: Collection[str]
) -> dict[str, datetime]:
    """When the master first asked to kill each of these allocations (absent: never)."""
    return await _first_notes(session, KILL_NOTE, allocation_ids)


async def preemptions_requested(
    session: AsyncSession, allocation_ids: Collection[str]
) -> dict[str, datetime]:
    """When each of these allocations was first asked to preempt (absent: never)."""
    return await _first_notes(session, PREEMPT_NOTE, allocation_ids)


def move_experiment(
    session: AsyncSession, exp: Experiment, target: RunState, now: datetime
) -> None:
    current = RunState(exp.state)
    why = check_transition(EXPERIMENT_TRANSITIONS, current, target, f"experiment {exp.id}")
    exp.state = target.value
    if target.is_terminal:
        exp.end_time = now
        # Checkpoint GC (services.checkpoint_gc) runs from the periodic job, outside this
        # transaction: the request is a column, so it survives a restart in between.
        exp.gc_requested_at = now
    _record(session, "experiment", str(exp.id), current.value, target.value, why, now)
    # Webhooks fire from the outbox, committed with this change (services/webhook_shipper).
    webhook_outbox.record_state(session, exp.id, target.value, now)


def move_trial(session: AsyncSession, trial: Trial, target: RunState, now: datetime) -> None:
    current = RunState(trial.state)
    why = check_transition(TRIAL_TRANSITIONS, current, target, f"trial {trial.id}")
    trial.state = target.value
    if target.is_terminal:
        trial.end_time = now
    _record(session, "trial", str(trial.id), current.value, target.value, why, now)


def move_allocation(
    session: AsyncSession,
    alloc: Allocation,
    target: AllocationState,
    now: datetime,
    detail: str = "",
) -> None:
    current = AllocationState(alloc.state)
    what = f"allocation {alloc.allocation_id}"
    why = check_transition(ALLOCATION_TRANSITIONS, current, target, what)
    alloc.state = target.value
    if target is AllocationState.TERMINATED:
        alloc.end_time = now
    reason = f"{why}: {detail}" if detail else why
    _record(session, "allocation", alloc.allocation_id, current.value, target.value, reason, now)


_MOVE_LIVE_ALLOCATION = (
    update(Allocation)
    .where(
        Allocation.allocation_id == bindparam("id"),
        Allocation.state == bindparam("current"),
        Allocation.end_time.is_(None),
    )
    .values(state=bindparam("target"))
)


async def move_live_allocation(
    session: AsyncSession,
    allocation_id: str,
    current: AllocationState,
    target: AllocationState,
    now: datetime,
) -> bool:
    """`move_allocation` for an allocation not loaded as an object, on its way to running (an
    agent reports each container pulling, starting, running: three a task): one UPDATE that
    moves it only from the state it was read in, and its row in `state_changes`, without the
    ORM's load and flush. False if it had moved or ended since it was read."""
    assert target is not AllocationState.TERMINATED  # an end frees slots: move_allocation's
    why = check_transition(ALLOCATION_TRANSITIONS, current, target, f"allocation {allocation_id}")
    conn = await session.connection()
    moved = await conn.execute(
        _MOVE_LIVE_ALLOCATION,
        {"id": allocation_id, "current": current.value, "target": target.value},
    )
    if moved.rowcount != 1:
        return False
    row = change_row("allocation", allocation_id, current.value, target.value, why, now)
    await insert_changes(session, [row])
    return True


async def insert_changes(session: AsyncSession, rows: list[dict[str, object]]) -> None:
    """State change rows written by a caller that moved the rows itself on Core's path."""
    if rows:
        conn = await session.connection()
        await conn.execute(_INSERT_STATE_CHANGES, rows)
