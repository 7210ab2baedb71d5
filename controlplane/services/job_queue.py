"""The job queue as users see it: each pool's jobs in scheduling order, from the last pass.

A job appears while it has work pending or running in its pool. Its position (`jobs_ahead`) is
its index in the order the pool's scheduler works through jobs: priority first (priority and
round robin), then queue position. Fair share has no such order: -1, as in Determined. A job is
SCHEDULED when any of its allocations holds resources.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Experiment, Job, User
from controlplane.services.scheduling.pools import PassResult, PoolRunner, Scheduling
from resource_pools.config_scheduler import SchedulerConfig, SchedulerType
from resource_pools.factory import Scheduler, make_scheduler
from resource_pools.job_queue import JobState as LibJobState
from resource_pools.job_queue import job_queue as lib_job_queue
from resource_pools.job_queue import queue_stats as lib_queue_stats

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
    """The pass's jobs in queue order (resource_pools.job_queue), in the wire's state names."""
    return jobs_of(result, _scheduler_for(scheduler_type, default_priority))


def _scheduler_for(kind: SchedulerType, default_priority: int) -> Scheduler:
    if kind is SchedulerType.PRIORITY:
        return make_scheduler(SchedulerConfig(type=kind, default_priority=default_priority))
    return make_scheduler(SchedulerConfig(type=kind))


def jobs_of(result: PassResult, scheduler: Scheduler) -> list[PassJob]:
    infos = lib_job_queue(result.snapshot, result.plan, scheduler)  # type: ignore[arg-type]
    out = []
    for info in infos:
        if info.state is LibJobState.SCHEDULED:
            state = SCHEDULED_BACKFILLED if info.backfilled else SCHEDULED
        else:
            state = QUEUED
        reason = info.wait_reason or (
            info.wait_code.value.replace("_", " ") if info.wait_code else "waiting"
        )
        out.append(
            PassJob(
                job_id=info.job_id,
                state=state,
                jobs_ahead=info.jobs_ahead,
                requested_slots=info.requested_slots,
                allocated_slots=info.allocated_slots,
                wait_reason="" if state != QUEUED else reason,
            )
        )
    return out


def queue_stats(result: PassResult) -> tuple[int, int]:
    """(queued, scheduled) tasks, as Determined's JobStats counts them after a pass."""
    stats = lib_queue_stats(result.snapshot, result.plan)
    return stats.queued_count, stats.scheduled_count


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
        last = await scheduling.current(runner.name)
        if last is None:
            continue
        for pj in jobs_of(last, runner.scheduler):
            if runner.provider_note and pj.state == QUEUED:
                pj = replace(pj, wait_reason=f"{pj.wait_reason}; {runner.provider_note}")
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
