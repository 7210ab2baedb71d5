"""State changes go through the transition tables and leave a row in `state_changes`."""

from __future__ import annotations

from datetime import datetime

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


def _record(
    session: AsyncSession,
    entity: str,
    entity_id: str,
    old: str | None,
    new: str,
    why: str,
    now: datetime,
) -> None:
    session.add(
        StateChange(
            entity=entity, entity_id=entity_id, from_state=old, to_state=new, reason=why, at=now
        )
    )


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


def move_experiment(
    session: AsyncSession, exp: Experiment, target: RunState, now: datetime
) -> None:
    current = RunState(exp.state)
    why = check_transition(EXPERIMENT_TRANSITIONS, current, target, f"experiment {exp.id}")
    exp.state = target.value
    if target.is_terminal:
        exp.end_time = now
    _record(session, "experiment", str(exp.id), current.value, target.value, why, now)


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
