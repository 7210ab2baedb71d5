"""The job queue: `det job list` (GetJobsV2, and the older GetJobs), per-pool queue counts,
and `det job update` (UpdateJobQueue)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from litestar import get, post
from litestar.params import JSONBody, QueryParameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Limit, Offset, OrderBy, clamp_limit, is_desc
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.jobs import (
    GetJobsResponse,
    GetJobsV2Response,
    Job,
    JobState,
    JobSummary,
    JobType,
    LimitedJob,
    PoolQueueStats,
    QueueStats,
    QueueStatsResponse,
    RBACJob,
    UpdateJobQueueRequest,
)
from controlplane.api.schemas.reports import Empty
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.rbac import Permission
from controlplane.services import jobs as job_service
from controlplane.services.job_queue import QueueEntry, job_queue

_TYPES = {t.name: t for t in JobType}
_LIMITED = set(LimitedJob.model_fields)


def _iso(value: object) -> str:
    return value.isoformat().replace("+00:00", "Z")  # type: ignore[attr-defined]


def job_out(entry: QueueEntry) -> Job:
    job, pj = entry.job, entry.pass_job
    return Job(
        summary=JobSummary(state=JobState(f"STATE_{pj.state}"), jobs_ahead=pj.jobs_ahead),
        type=_TYPES.get(job.job_type, JobType.UNSPECIFIED),
        submission_time=_iso(job.submitted_at),
        username=entry.username,
        user_id=job.owner_id,
        resource_pool=job.resource_pool,
        is_preemptible=entry.preemptible,
        priority=job.priority if job.priority is not None else entry.default_priority,
        weight=job.weight,
        entity_id=job.entity_id,
        job_id=job.job_id,
        requested_slots=pj.requested_slots,
        allocated_slots=pj.allocated_slots,
        name=job.name,
        progress=entry.progress,
        workspace_id=job.workspace_id,
        wait_reason=pj.wait_reason,
        queue_position=pj.jobs_ahead,
        max_slots=job.max_slots,
    )


States = Annotated[
    list[str] | None,
    QueryParameter(name="states", max_items=8),
]


PoolParam = Annotated[str | None, QueryParameter(name="resourcePool", max_length=255)]


async def _queue(
    db: Db, ctx: Ctx, order_by: str, resource_pool: str | None, states: list[str] | None
) -> list[QueueEntry]:
    if resource_pool and resource_pool not in ctx.scheduling.pools:
        raise InvalidArgument(f"resource pool {resource_pool!r} does not exist")
    entries = await job_queue(db, ctx.scheduling, resource_pool or None)
    wanted = {s.removeprefix("STATE_") for s in states or []}
    unknown = wanted - {s.name for s in JobState}
    if unknown:
        raise InvalidArgument(f"unknown job states: {sorted(unknown)}")
    if wanted:
        entries = [e for e in entries if e.pass_job.state in wanted]
    if is_desc(order_by):
        entries.reverse()
    return entries


def _visible(principal: Caller) -> Callable[[QueueEntry, Job], bool]:
    experiments = principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA)
    others = principal.workspaces(Permission.VIEW_NSC)

    def visible(entry: QueueEntry, job: Job) -> bool:
        where = experiments if entry.job.job_type == "EXPERIMENT" else others
        return where is None or job.workspace_id in where

    return visible


@get("/api/v1/job-queues-v2")
async def get_jobs_v2(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    resource_pool: PoolParam = None,
    states: States = None,
) -> GetJobsV2Response:
    entries = await _queue(db, ctx, order_by, resource_pool, states)
    page = clamp_limit(limit)
    chunk = entries[offset:] if page < 0 else entries[offset : offset + page]
    # Under RBAC a job in a workspace the caller may not view keeps its place in the queue,
    # limited to what Determined shows of it, so positions and totals stay those of the pool.
    visible = _visible(principal)

    def shown(e: QueueEntry) -> RBACJob:
        job = job_out(e)
        if visible(e, job):
            return RBACJob(full=job)
        return RBACJob(limited=LimitedJob.model_validate(job.model_dump(include=_LIMITED)))

    return GetJobsV2Response(
        jobs=[shown(e) for e in chunk],
        pagination=Pagination.of(offset, page, len(chunk), len(entries)),
    )


@get("/api/v1/job-queues")
async def get_jobs(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    resource_pool: PoolParam = None,
    states: States = None,
) -> GetJobsResponse:
    """Determined's older GetJobs: whole jobs only, so under RBAC only those the caller may
    view (GetJobsV2 keeps the others' places)."""
    visible = _visible(principal)
    jobs = [
        job
        for e in await _queue(db, ctx, order_by, resource_pool, states)
        if visible(e, job := job_out(e))
    ]
    page = clamp_limit(limit)
    chunk = jobs[offset:] if page < 0 else jobs[offset : offset + page]
    return GetJobsResponse(
        jobs=chunk, pagination=Pagination.of(offset, page, len(chunk), len(jobs))
    )


@get("/api/v1/job-queues/stats")
async def get_queue_stats(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    resource_pools: Annotated[
        list[str] | None, QueryParameter(name="resourcePools", max_items=256)
    ] = None,
) -> QueueStatsResponse:
    """Queued and scheduled jobs per pool (the web UI's cluster overview)."""
    names = list(dict.fromkeys(resource_pools or ctx.scheduling.pools))
    unknown = [n for n in names if n not in ctx.scheduling.pools]
    if unknown:
        raise InvalidArgument(f"resource pools do not exist: {', '.join(sorted(unknown))}")
    counts = {n: QueueStats() for n in names}
    for e in await job_queue(db, ctx.scheduling, None):
        stats = counts.get(e.job.resource_pool)
        if stats is None:
            continue
        if e.pass_job.state == "QUEUED":
            stats.queued_count += 1
        else:
            stats.scheduled_count += 1
    return QueueStatsResponse(
        results=[PoolQueueStats(resource_pool=n, stats=counts[n]) for n in names]
    )


@post("/api/v1/job-queues", status_code=200)
async def update_job_queue(
    data: JSONBody[UpdateJobQueueRequest], db: Db, principal: Caller, ctx: Ctx
) -> Empty:
    changes = [
        job_service.QueueChange(
            job_id=u.job_id,
            priority=u.priority,
            weight=u.weight,
            resource_pool=u.resource_pool,
            ahead_of=u.ahead_of,
            behind_of=u.behind_of,
        )
        for u in data.updates
    ]
    await job_service.apply_queue_changes(db, principal.user, changes, ctx.scheduling)
    return Empty()


ROUTES = [get_jobs_v2, get_jobs, get_queue_stats, update_job_queue]
