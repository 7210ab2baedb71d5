"""What an experiment's open allocations are doing, for the state the API shows.

Determined shows an ACTIVE experiment as QUEUED, PULLING, STARTING or RUNNING by its
allocations (domain/states.py `experiment_wire_state`); this reads those allocations' states
in one query per page of experiments.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Experiment, Trial
from controlplane.domain.states import AllocationState, RunState, experiment_wire_state


async def open_allocation_states(
    session: AsyncSession, experiment_ids: Collection[int]
) -> dict[int, set[str]]:
    """{experiment id: the states of its trials' open allocations} (absent: none open)."""
    if not experiment_ids:
        return {}
    rows = await session.execute(
        select(Trial.experiment_id, Allocation.state)
        .join(Allocation, Allocation.task_id == Trial.task_id)
        .where(
            Trial.experiment_id.in_(sorted(set(experiment_ids))),
            Allocation.end_time.is_(None),
            Allocation.state != AllocationState.TERMINATED.value,
        )
        .distinct()
    )
    out: dict[int, set[str]] = {}
    for experiment_id, state in rows.all():
        out.setdefault(experiment_id, set()).add(state)
    return out


async def wire_states(session: AsyncSession, experiments: Collection[Experiment]) -> dict[int, str]:
    """{experiment id: the experimentv1State to show}; only ACTIVE ones cost a lookup. A
    detached (unmanaged) run has no allocations: it shows the state its trials report."""
    active = [e.id for e in experiments if e.state == RunState.ACTIVE.value and not e.unmanaged]
    live = await open_allocation_states(session, active)
    return {
        e.id: RunState(e.state).wire
        if e.unmanaged
        else experiment_wire_state(RunState(e.state), live.get(e.id, ()))
        for e in experiments
    }
