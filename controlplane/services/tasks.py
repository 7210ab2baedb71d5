"""Tasks as users see them: live allocations (`det task list`, `det slot list`) and one task.

A task is a trial or a command; its name is what Determined shows: `Trial 5 (Experiment 3)` or
the command's description.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Command, ExperimentContext, Job, Task, Trial
from controlplane.domain.container_ids import container_id
from controlplane.domain.errors import NotFound
from controlplane.services.rbac_scopes import in_workspaces

_CHUNK = 500


@dataclass(frozen=True)
class PlacedContainer:
    container_id: str
    agent_id: str
    device_ids: tuple[int, ...]


@dataclass(frozen=True)
class LiveAllocation:
    allocation_id: str
    task_id: str
    task_type: str
    name: str
    state: str
    slots: int
    resource_pool: str
    priority: int | None
    registered_at: datetime
    containers: tuple[PlacedContainer, ...]


def containers(allocation_id: str, placement: dict[str, Any]) -> tuple[PlacedContainer, ...]:
    """One container per agent, ranked by agent id (as the scheduling pass numbers them)."""
    return tuple(
        PlacedContainer(container_id(allocation_id, rank), agent_id, tuple(placement[agent_id]))
        for rank, agent_id in enumerate(sorted(placement))
    )


async def task_names(session: AsyncSession, task_ids: Iterable[str]) -> dict[str, str]:
    ids = sorted(set(task_ids))
    names: dict[str, str] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        trials = await session.execute(
            select(Trial.task_id, Trial.id, Trial.experiment_id).where(Trial.task_id.in_(chunk))
        )
        for task_id, trial_id, exp_id in trials.all():
            names[task_id] = f"Trial {trial_id} (Experiment {exp_id})"
        commands = await session.execute(
            select(Command.task_id, Command.description).where(Command.task_id.in_(chunk))
        )
        names.update({task_id: text for task_id, text in commands.all()})
    return names


async def live_allocations(
    session: AsyncSession,
    *,
    trials_in: frozenset[int] | None = None,
    others_in: frozenset[int] | None = None,
) -> list[LiveAllocation]:
    """Every allocation that has not ended, oldest first. Under RBAC, only those of trials
    whose job is in `trials_in` and of other tasks whose job is in `others_in` (None: all)."""
    query = (
        select(Allocation, Task.task_type, Job.priority)
        .join(Task, Task.task_id == Allocation.task_id)
        .outerjoin(Job, Job.job_id == Task.job_id)
        .where(Allocation.end_time.is_(None))
        .order_by(Allocation.start_time, Allocation.allocation_id)
    )
    if trials_in is not None or others_in is not None:
        query = query.where(
            or_(
                and_(Task.task_type == "TRIAL", in_workspaces(Job.workspace_id, trials_in)),
                and_(Task.task_type != "TRIAL", in_workspaces(Job.workspace_id, others_in)),
            )
        )
    rows = (await session.execute(query)).all()
    names = await task_names(session, (alloc.task_id for alloc, _, _ in rows))
    return [
        LiveAllocation(
            allocation_id=alloc.allocation_id,
            task_id=alloc.task_id,
            task_type=task_type,
            name=names.get(alloc.task_id, alloc.task_id),
            state=alloc.state,
            slots=alloc.slots,
            resource_pool=alloc.resource_pool,
            priority=priority,
            registered_at=alloc.start_time,
            containers=containers(alloc.allocation_id, alloc.placement or {}),
        )
        for alloc, task_type, priority in rows
    ]


async def get_task(session: AsyncSession, task_id: str) -> tuple[Task, list[Allocation]]:
    task = await session.get(Task, task_id)
    if task is None:
        raise NotFound(f"task {task_id} not found")
    allocs = await session.scalars(
        select(Allocation)
        .where(Allocation.task_id == task_id)
        .order_by(Allocation.start_time, Allocation.allocation_id)
    )
    return task, list(allocs)


# Every task asks for it when it starts: built once, so its cache key is computed once.
_CONTEXT_ARCHIVE = (
    select(Task.task_id, Command.context, ExperimentContext.archive)
    .outerjoin(Command, Command.task_id == Task.task_id)
    .outerjoin(Trial, Trial.task_id == Task.task_id)
    .outerjoin(ExperimentContext, ExperimentContext.experiment_id == Trial.experiment_id)
    .where(Task.task_id == bindparam("task_id"))
)


async def context_archive(session: AsyncSession, task_id: str) -> bytes | None:
    """The task's context directory (.tar.gz): its command's, or its trial's experiment's; None
    when it has none. One statement."""
    row = (await session.execute(_CONTEXT_ARCHIVE, {"task_id": task_id})).first()
    if row is None:
        raise NotFound(f"task {task_id} not found")
    _, command_archive, experiment_archive = row
    return command_archive if command_archive is not None else experiment_archive
