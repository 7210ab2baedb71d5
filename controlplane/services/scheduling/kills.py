"""Which live allocations the master kills: recorded kill requests, and preemptions that ran
past their experiment's `preemption_timeout` (Determined: a preemption starts a timer; when it
fires, the allocation is killed). The pool loop sends the SIGKILLs (`pools._kills_due`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Command, Experiment, Trial
from controlplane.domain.command_states import CommandState
from controlplane.domain.search_plan import EARLY_EXIT_KILL_SECONDS
from controlplane.domain.states import RunState
from controlplane.services import history

DEFAULT_PREEMPTION_TIMEOUT_S = 3600
# A live allocation of a trial or command in these states is killed.
KILLED_TRIAL_STATES = (
    RunState.STOPPING_KILLED.value,
    RunState.ERROR.value,
    RunState.CANCELED.value,
)
# A pausing generic task's container is killed too; its task stays open (command_states).
KILLED_COMMAND = (
    CommandState.TERMINATING.value,
    CommandState.PAUSING.value,
    CommandState.UNPAUSING.value,
)


def preemption_timeout(config: dict[str, Any]) -> timedelta:
    value = config.get("preemption_timeout")
    return timedelta(seconds=DEFAULT_PREEMPTION_TIMEOUT_S if value is None else float(value))


def is_past_timeout(asked_at: datetime, timeout: timedelta, now: datetime) -> bool:
    return now - asked_at >= timeout


async def expire_preemptions(
    session: AsyncSession, pool: str, now: datetime
) -> dict[str, dict[str, Any]]:
    """Record a kill for every preempted allocation of the pool whose timeout has passed;
    returns them, id → placement."""
    rows = (
        await session.execute(
            select(Allocation, Experiment.config, Trial.early_exit_reason)
            .join(Trial, Trial.task_id == Allocation.task_id)
            .join(Experiment, Experiment.id == Trial.experiment_id)
            .where(
                Allocation.resource_pool == pool,
                Allocation.end_time.is_(None),
                Allocation.preempt_requested.is_(True),
            )
        )
    ).all()
    if not rows:
        return {}
    ids = [alloc.allocation_id for alloc, _, _ in rows]
    asked = await history.preemptions_requested(session, ids)
    killed = await history.kills_requested(session, ids)
    out: dict[str, dict[str, Any]] = {}
    for alloc, config, early_exit in rows:
        at = asked.get(alloc.allocation_id)
        if at is None or alloc.allocation_id in killed:
            continue
        timeout = preemption_timeout(config or {})
        if early_exit is not None:  # Determined force-kills such a trial 10 s after its report
            timeout = min(timeout, timedelta(seconds=EARLY_EXIT_KILL_SECONDS))
        if is_past_timeout(at, timeout, now):
            seconds = f"{timeout.total_seconds():g}s"
            why = f"preemption not finished within preemption_timeout ({seconds})"
            history.note_kill(session, alloc, why, now)
            out[alloc.allocation_id] = alloc.placement or {}
    return out


@dataclass(frozen=True)
class KillCandidates:
    # Live allocations to SIGKILL: of killed trials and commands, or with a kill request.
    wanted: dict[str, dict[str, Any]]
    # A live allocation is being preempted without a kill request: its timeout may have run out.
    preempting: bool


_KILLED_STATE = or_(Trial.state.in_(KILLED_TRIAL_STATES), Command.state.in_(KILLED_COMMAND))
_KILL_NOTED = history.kill_noted(Allocation.allocation_id)
# Every pass runs it: built once, so SQLAlchemy computes its cache key once.
_CANDIDATES = (
    select(
        Allocation.allocation_id,
        Allocation.placement,
        Allocation.preempt_requested,
        _KILLED_STATE,
        _KILL_NOTED,
    )
    .outerjoin(Trial, Trial.task_id == Allocation.task_id)
    .outerjoin(Command, Command.task_id == Allocation.task_id)
    .where(
        Allocation.resource_pool == bindparam("pool"),
        Allocation.end_time.is_(None),
        or_(_KILLED_STATE, _KILL_NOTED, Allocation.preempt_requested.is_(True)),
    )
)


# What a pass's own query of the live allocations reads alongside them (snapshot._RUNNING), to
# need no statement of its own; its FROM must outer-join Trial and Command on the task.
KILL_COLUMNS = (Allocation.preempt_requested, _KILLED_STATE, _KILL_NOTED)


async def kill_candidates(session: AsyncSession, pool: str) -> KillCandidates:
    """One statement over the pool's live allocations (`expire_preemptions` only if needed)."""
    rows = await session.execute(_CANDIDATES, {"pool": pool})
    return candidates_of(rows.all())


def candidates_of(
    rows: Iterable[tuple[str, dict[str, Any] | None, bool | None, bool | None, bool | None]],
) -> KillCandidates:
    """Pure: (allocation id, placement, *KILL_COLUMNS) of live allocations in, candidates out."""
    wanted: dict[str, dict[str, Any]] = {}
    preempting = False
    for allocation_id, placement, preempt_requested, by_state, by_note in rows:
        if by_state or by_note:
            wanted[allocation_id] = placement or {}
        if preempt_requested and not by_note:
            preempting = True
    return KillCandidates(wanted=wanted, preempting=preempting)
