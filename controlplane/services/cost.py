"""Reading what cost needs: allocations (with the trial, experiment, user, workspace and pool
they are charged to) and the instances provisioners launched (price and life). The sums are
pure (controlplane/domain/cost.py, usage_periods.py); this module only loads their inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import (
    Allocation,
    Command,
    Experiment,
    Project,
    ProvisionerInstance,
    Task,
    Trial,
    User,
    Workspace,
)
from controlplane.domain.cost import AllocationUse, InstanceLife

# At most this many allocations feed one answer: a usage window spanning more is refused with
# a request to narrow it, rather than read without bound (services answer within one request).
MAX_ALLOCATIONS = 200_000


class TooMuchUsage(Exception):
    """The window holds more allocations than one answer reads (HTTP 400: narrow it)."""


def _placement_slots(placement: dict[str, Any] | None, slots: int) -> dict[str, int]:
    """agent -> slots held there; an allocation without a placement (none on record) keeps its
    slots under no agent, so they count as used but unpriced."""
    held = {
        str(agent): len(devices)
        for agent, devices in (placement or {}).items()
        if isinstance(devices, list) and devices
    }
    if not held and slots > 0:
        return {"": slots}
    return held


def _uses_query() -> Select[Any]:
    exp_ws = Workspace.__table__.alias("exp_ws")
    cmd_ws = Workspace.__table__.alias("cmd_ws")
    return (
        select(
            Allocation.allocation_id,
            Allocation.start_time,
            Allocation.end_time,
            Allocation.placement,
            Allocation.slots,
            Allocation.resource_pool,
            Task.task_id,
            Task.task_type,
            Task.owner_id,
            Trial.id.label("trial_id"),
            Experiment.id.label("experiment_id"),
            Experiment.labels,
            User.username,
            func.coalesce(exp_ws.c.name, cmd_ws.c.name).label("workspace"),
        )
        .join(Task, Task.task_id == Allocation.task_id)
        .join(User, User.id == Task.owner_id)
        .outerjoin(Trial, Trial.task_id == Task.task_id)
        .outerjoin(Experiment, Experiment.id == Trial.experiment_id)
        .outerjoin(Project, Project.id == Experiment.project_id)
        .outerjoin(exp_ws, exp_ws.c.id == Project.workspace_id)
        .outerjoin(Command, Command.task_id == Task.task_id)
        .outerjoin(cmd_ws, cmd_ws.c.id == Command.workspace_id)
    )


def _use(row: Any) -> AllocationUse:
    labels = row.labels if isinstance(row.labels, list) else []
    return AllocationUse(
        allocation_id=row.allocation_id,
        start=row.start_time,
        end=row.end_time,
        placement=_placement_slots(row.placement, row.slots),
        pool=row.resource_pool or "",
        task_id=row.task_id,
        task_type=row.task_type,
        trial_id=row.trial_id,
        experiment_id=row.experiment_id,
        username=row.username or "",
        user_id=row.owner_id,
        workspace=row.workspace or "",
        labels=tuple(str(label) for label in labels),
    )


async def _read_uses(session: AsyncSession, query: Select[Any]) -> list[AllocationUse]:
    rows = (await session.execute(query.limit(MAX_ALLOCATIONS + 1))).all()
    if len(rows) > MAX_ALLOCATIONS:
        raise TooMuchUsage(
            f"more than {MAX_ALLOCATIONS} allocations in this window: ask for a shorter one"
        )
    return [_use(row) for row in rows]


async def uses_in_window(
    session: AsyncSession, start: datetime, end: datetime
) -> list[AllocationUse]:
    """Allocations that held slots at any time in [start, end)."""
    query = _uses_query().where(
        Allocation.start_time < end,
        or_(Allocation.end_time.is_(None), Allocation.end_time > start),
    )
    return await _read_uses(session, query.order_by(Allocation.start_time))


async def uses_of_experiment(session: AsyncSession, experiment_id: int) -> list[AllocationUse]:
    query = _uses_query().where(Trial.experiment_id == experiment_id)
    return await _read_uses(session, query.order_by(Allocation.start_time))


async def uses_of_trial(session: AsyncSession, trial_id: int) -> list[AllocationUse]:
    query = _uses_query().where(Trial.id == trial_id)
    return await _read_uses(session, query.order_by(Allocation.start_time))


def _life(row: ProvisionerInstance) -> InstanceLife:
    return InstanceLife(
        agent=row.agent_name,
        pool=row.pool,
        start=row.launched_at,
        end=row.ended_at,
        price_per_hour=row.price_per_hour,
        slots=row.slots,
        instance_id=row.instance_id,
        instance_type=row.instance_type,
        spot=row.spot,
    )


async def lives_in_window(
    session: AsyncSession, start: datetime | None, end: datetime | None
) -> list[InstanceLife]:
    """Instances alive at any time in [start, end) (all of them without bounds)."""
    query = select(ProvisionerInstance)
    if end is not None:
        query = query.where(ProvisionerInstance.launched_at < end)
    if start is not None:
        query = query.where(
            or_(ProvisionerInstance.ended_at.is_(None), ProvisionerInstance.ended_at > start)
        )
    rows = await session.scalars(query.order_by(ProvisionerInstance.launched_at))
    return [_life(row) for row in rows]


async def lives_of_agents(
    session: AsyncSession, uses: Sequence[AllocationUse]
) -> list[InstanceLife]:
    """The instances that ran the agents these allocations were placed on, while they ran."""
    agents = sorted({agent for use in uses for agent in use.placement if agent})
    if not agents:
        return []
    lives: list[InstanceLife] = []
    for i in range(0, len(agents), 500):  # bounded IN lists
        chunk = agents[i : i + 500]
        rows = await session.scalars(
            select(ProvisionerInstance).where(ProvisionerInstance.agent_name.in_(chunk))
        )
        lives.extend(_life(row) for row in rows)
    return lives
