"""Jobs and the job queue: creation, listing, and the changes users make to a queued job.

A job's queue position starts at its submission time in microseconds times
``POSITION_SPACING``; moving a job ahead of or behind another takes the midpoint between the two
neighbours, and renumbers the pool's queue only when no integer is left between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Experiment, Job, User, Workspace
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied
from controlplane.services import workspace_pools
from controlplane.services.pool_catalog import PoolCatalog
from controlplane.services.reschedule import mark_reschedule

POSITION_SPACING = 1024


def initial_position(submitted_at: datetime) -> int:
    return int(submitted_at.timestamp() * 1_000_000) * POSITION_SPACING


def new_job(
    *,
    job_id: str,
    job_type: str,
    owner: User,
    name: str,
    entity_id: str,
    workspace_id: int,
    resource_pool: str,
    priority: int | None,
    weight: float,
    max_slots: int | None,
    now: datetime,
) -> Job:
    return Job(
        job_id=job_id,
        job_type=job_type,
        owner_id=owner.id,
        workspace_id=workspace_id,
        name=name,
        entity_id=entity_id,
        resource_pool=resource_pool,
        priority=priority,
        weight=weight,
        max_slots=max_slots,
        queue_position=initial_position(now),
        submitted_at=now,
    )


async def get_job(session: AsyncSession, job_id: str) -> Job:
    job = await session.get(Job, job_id)
    if job is None:
        raise NotFound(f"job {job_id} not found")
    return job


@dataclass(frozen=True)
class QueueChange:
    """One entry of `POST /api/v1/job-queues` (v1QueueControl)."""

    job_id: str
    priority: int | None = None
    weight: float | None = None
    resource_pool: str | None = None
    ahead_of: str | None = None
    behind_of: str | None = None


def _check_change(change: QueueChange) -> None:
    if change.priority is not None and not 1 <= change.priority <= 99:
        raise InvalidArgument(f"priority must be between 1 and 99 (got {change.priority})")
    if change.weight is not None and not change.weight > 0:
        raise InvalidArgument(f"weight must be greater than 0 (got {change.weight})")
    if change.ahead_of is not None and change.behind_of is not None:
        raise InvalidArgument("give aheadOf or behindOf, not both")
    if change.job_id in (change.ahead_of, change.behind_of):
        raise InvalidArgument("a job cannot be moved relative to itself")


async def apply_queue_changes(
    session: AsyncSession,
    user: User,
    changes: Sequence[QueueChange],
    scheduling: PoolCatalog,
) -> None:
    """All or nothing: every change is checked before the first is applied."""
    for change in changes:
        _check_change(change)
    for change in changes:
        job = await get_job(session, change.job_id)
        if not (user.admin or user.id == job.owner_id):
            raise PermissionDenied(f"only the owner of job {job.job_id} or an admin may change it")
        await _apply(session, job, change, scheduling)


async def _apply(
    session: AsyncSession, job: Job, change: QueueChange, scheduling: PoolCatalog
) -> None:
    exp = await session.scalar(select(Experiment).where(Experiment.job_id == job.job_id))
    resources_patch: dict[str, object] = {}
    old_pool = job.resource_pool
    if change.resource_pool is not None and change.resource_pool != job.resource_pool:
        pool = scheduling.resolve_pool(change.resource_pool, 1)
        ws = await session.get(Workspace, job.workspace_id)
        if ws is not None:
            await workspace_pools.check_available(session, pool, ws)
        job.resource_pool = pool
        resources_patch["resource_pool"] = pool
        if exp is not None:
            exp.resource_pool = pool
    if change.priority is not None:
        job.priority = change.priority
        resources_patch["priority"] = change.priority
        # As in Determined: a new priority puts the job back at its submission-time position.
        job.queue_position = initial_position(job.submitted_at)
    if change.weight is not None:
        job.weight = change.weight
        resources_patch["weight"] = change.weight
    if change.ahead_of is not None or change.behind_of is not None:
        other_id = change.ahead_of or change.behind_of
        assert other_id is not None
        await _move(session, job, await get_job(session, other_id), ahead=bool(change.ahead_of))
    if exp is not None and resources_patch:
        config = dict(exp.config)
        config["resources"] = {**(config.get("resources") or {}), **resources_patch}
        exp.config = config
    mark_reschedule(session, job.resource_pool)
    if old_pool != job.resource_pool:
        mark_reschedule(session, old_pool)


async def _move(session: AsyncSession, job: Job, other: Job, *, ahead: bool) -> None:
    if other.resource_pool != job.resource_pool:
        raise InvalidArgument(
            f"job {other.job_id} is in resource pool {other.resource_pool!r}, job {job.job_id} "
            f"in {job.resource_pool!r}; only jobs of one pool can be ordered"
        )
    for _ in range(2):
        neighbour = await _neighbour(session, other, ahead=ahead, skip=job.job_id)
        if neighbour is None:
            job.queue_position = other.queue_position + (
                -POSITION_SPACING if ahead else POSITION_SPACING
            )
            return
        low, high = sorted((neighbour, other.queue_position))
        if high - low >= 2:
            job.queue_position = (low + high) // 2
            return
        await _renumber(session, job.resource_pool)
        await session.refresh(other)
        await session.refresh(job)
    raise AssertionError("renumbering left no room between two jobs")


async def _neighbour(session: AsyncSession, other: Job, *, ahead: bool, skip: str) -> int | None:
    column = Job.queue_position
    q = select(column).where(Job.resource_pool == other.resource_pool, Job.job_id != skip)
    if ahead:
        q = q.where(column < other.queue_position).order_by(column.desc())
    else:
        q = q.where(column > other.queue_position).order_by(column.asc())
    return await session.scalar(q.limit(1))


async def _renumber(session: AsyncSession, pool: str) -> None:
    rows = await session.execute(
        select(Job.job_id, Job.queue_position)
        .where(Job.resource_pool == pool)
        .order_by(Job.queue_position, Job.submitted_at, Job.job_id)
    )
    ordered = rows.all()
    base = ordered[0][1] if ordered else 0
    for index, (job_id, _) in enumerate(ordered):
        await session.execute(
            update(Job)
            .where(Job.job_id == job_id)
            .values(queue_position=base + index * POSITION_SPACING)
            .execution_options(synchronize_session=False)
        )
    await session.flush()
