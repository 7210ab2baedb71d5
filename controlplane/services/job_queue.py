"""The job queue as users see it: each pool's jobs in scheduling order, from the last pass.

A job appears while it has work pending or running in its pool. Its position (`jobs_ahead`) is
its index in the order the pool's scheduler works through jobs: priority first (priority and
round robin), then queue position. Fair share has no such order: -1, as in Determined. A job is
SCHEDULED when any of its allocations holds resources.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Experiment, Job, User
from controlplane.services.scheduling.pools import PassResult, PoolRunner, Scheduling
from resource_pools.config_scheduler import SchedulerType

QUEUED = "QUEUED"
SCHEDULED = "SCHEDULED"
SCHEDULED_BACKFILLED = "SCHEDULED_BACKFILLED"


@dataclass(frozen=True)
class PassJob:
    """One job of one pass: pure data derived from the snapshot and plan."""

    job_id: str
    state: str
    jobs_ahead: int
    requested_slots: int
    allocated_slots: int
    wait_reason: str


def jobs_of_pass(
    result: PassResult, scheduler_type: SchedulerType, default_priority: int
) -> list[PassJob]:
    snapshot, plan = result.snapshot, result.plan
    pending = {r.allocation_id: r for r in snapshot.pending}
    requested: dict[str, int] = {}
    allocated: dict[str, int] = {}
    backfilled: set[str] = set()
    for r in snapshot.running:
        requested[r.job_id] = requested.get(r.job_id, 0) + r.request.slots
        allocated[r.job_id] = allocated.get(r.job_id, 0) + r.slots
    for r in snapshot.pending:
        requested[r.job_id] = requested.get(r.job_id, 0) + r.slots
    for s in plan.start:
        job_id = pending[s.allocation_id].job_id
        allocated[job_id] = allocated.get(job_id, 0) + sum(p.slots for p in s.placements)
        if s.backfilled:
            backfilled.add(job_id)
    reasons: dict[str, str] = {}
    for w in plan.waiting:
        job_id = pending[w.allocation_id].job_id
        reasons.setdefault(job_id, w.detail or w.reason.value.replace("_", " "))
    held = {r.job_id for r in snapshot.running} | {
        pending[s.allocation_id].job_id for s in plan.start
    }

    def key(job_id: str) -> tuple[int, float, str]:
        group = snapshot.group(job_id)
        priority = group.priority if group.priority is not None else default_priority
        if scheduler_type is not SchedulerType.PRIORITY:
            priority = 0
        position = group.position if group.position is not None else 0.0
        return (priority, position, job_id)

    ordered = sorted(requested, key=key)
    ranked = scheduler_type is not SchedulerType.FAIR_SHARE
    out = []
    for index, job_id in enumerate(ordered):
        if job_id in held:
            state = SCHEDULED_BACKFILLED if job_id in backfilled else SCHEDULED
        else:
            state = QUEUED
        out.append(
            PassJob(
                job_id=job_id,
                state=state,
                jobs_ahead=index if ranked else -1,
                requested_slots=requested[job_id],
                allocated_slots=allocated.get(job_id, 0),
                wait_reason="" if job_id in held else reasons.get(job_id, "waiting"),
            )
        )
    return out


def queue_stats(result: PassResult) -> tuple[int, int]:
    """(queued, scheduled) tasks, as Determined's JobStats counts them after a pass."""
    scheduled = len(result.snapshot.running) + len(result.plan.start)
    return len(result.plan.waiting), scheduled


@dataclass(frozen=True)
class QueueEntry:
    job: Job
    pass_job: PassJob
    username: str
    preemptible: bool
    progress: float | None
    default_priority: int


async def job_queue(
    session: AsyncSession, scheduling: Scheduling, pool: str | None = None
) -> list[QueueEntry]:
    runners: list[PoolRunner] = [
        r for name, r in sorted(scheduling.pools.items()) if pool is None or name == pool
    ]
    pass_jobs: list[tuple[PoolRunner, PassJob]] = []
    for runner in runners:
        if runner.last is None:
            continue
        cfg = runner.scheduler_config
        for pj in jobs_of_pass(runner.last, cfg.type, cfg.default_priority):
            pass_jobs.append((runner, pj))
    ids = [pj.job_id for _, pj in pass_jobs]
    rows = (
        {j.job_id: j for j in await session.scalars(select(Job).where(Job.job_id.in_(ids)))}
        if ids
        else {}
    )
    owners = (
        {
            u.id: u.username
            for u in await session.scalars(
                select(User).where(User.id.in_({j.owner_id for j in rows.values()}))
            )
        }
        if rows
        else {}
    )
    progress = (
        {
            e.job_id: e.progress
            for e in await session.scalars(select(Experiment).where(Experiment.job_id.in_(ids)))
        }
        if ids
        else {}
    )
    out = []
    for runner, pj in pass_jobs:
        job = rows.get(pj.job_id)
        if job is None:
            continue
        out.append(
            QueueEntry(
                job=job,
                pass_job=pj,
                username=owners.get(job.owner_id, ""),
                preemptible=runner.scheduler_config.is_preemptible,
                progress=progress.get(job.job_id),
                default_priority=runner.scheduler_config.default_priority,
            )
        )
    return out
