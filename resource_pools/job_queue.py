"""The job queue of one pool after one pass: jobs in scheduling order with their state and slots.

Pure: a snapshot, the plan a scheduler made from it, and that scheduler go in; job infos come
out. Mirrors Determined's job-queue view (reference §1.3 notes, §1.5 scheduler_test.go):

- a job is every job with a pending or running request in the snapshot;
- it is SCHEDULED when any of its allocations runs or is started by the plan, else QUEUED;
- ``jobs_ahead`` is its index in the order the scheduler works through jobs (priority, then
  queue position, then submission); fair share has no such order and reports -1;
- queue statistics count tasks (allocations), not jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from resource_pools.config_scheduler import DEFAULT_PRIORITY
from resource_pools.fair_share import FairShareScheduler
from resource_pools.priority import PriorityScheduler
from resource_pools.round_robin import RoundRobinScheduler
from resource_pools.types import PoolSnapshot, Request, SchedulingPlan, WaitReason

AnyScheduler = PriorityScheduler | FairShareScheduler | RoundRobinScheduler
NO_ORDER = -1


class JobState(StrEnum):
    """A job's scheduling state as the job queue shows it."""

    QUEUED = "QUEUED"
    SCHEDULED = "SCHEDULED"


@dataclass(frozen=True, slots=True)
class JobInfo:
    """One job of one pool's queue after a pass.

    ``requested_slots`` sums the slots of its pending and running requests; ``allocated_slots``
    the slots its running allocations hold plus those the plan starts (a running allocation the
    plan preempts still holds its slots). ``queue_position`` is the job's position, or its
    submission time in microseconds when it has none. ``wait_reason`` is empty for a scheduled
    job; for a queued one it is the detail of its first request in the plan's waiting list.
    ``backfilled`` is True when the plan starts some of its work behind a more important
    request that did not fit.
    """

    job_id: str
    state: JobState
    jobs_ahead: int
    requested_slots: int
    allocated_slots: int
    queue_position: float
    priority: int
    weight: float
    wait_reason: str = ""
    wait_code: WaitReason | None = None
    backfilled: bool = False


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Tasks of one pool after a pass: waiting (queued) and holding resources (scheduled)."""

    queued_count: int
    scheduled_count: int


def queue_stats(snapshot: PoolSnapshot, plan: SchedulingPlan) -> QueueStats:
    """Per-task counts, as Determined's JobStats: running and started tasks are scheduled."""
    started = {s.allocation_id for s in plan.start}
    queued = sum(1 for r in snapshot.pending if r.allocation_id not in started)
    return QueueStats(queued, len(snapshot.running) + len(snapshot.pending) - queued)


@dataclass
class _Tally:
    requested: int = 0
    allocated: int = 0
    held: bool = False
    backfilled: bool = False
    submitted_at: float | None = None
    waiting: tuple[str, WaitReason] | None = None

    def add(self, request: Request) -> None:
        self.requested += request.slots
        if self.submitted_at is None or request.job_submitted_at < self.submitted_at:
            self.submitted_at = request.job_submitted_at


def job_queue(
    snapshot: PoolSnapshot, plan: SchedulingPlan, scheduler: AnyScheduler
) -> list[JobInfo]:
    """Every job with work in ``snapshot``, in queue order, as ``plan`` leaves it.

    The order is the scheduler's: priority (lower first; the scheduler's default for a job
    without one), then queue position, submission time and job id. Round robin ignores
    priorities, and so does its order here. Under fair share the list is in queue-position
    order but every ``jobs_ahead`` is -1.
    """
    tallies = _tally(snapshot, plan)
    by_priority = isinstance(scheduler, PriorityScheduler)
    default = scheduler.default_priority if by_priority else DEFAULT_PRIORITY
    ranked = not isinstance(scheduler, FairShareScheduler)

    def priority_of(job_id: str) -> int:
        priority = snapshot.group(job_id).priority
        return default if priority is None else priority

    def position_of(job_id: str) -> float:
        position = snapshot.group(job_id).position
        submitted = tallies[job_id].submitted_at or 0.0
        return submitted * 1_000_000 if position is None else position

    def key(job_id: str) -> tuple[int, float, float, str]:
        level = priority_of(job_id) if by_priority else 0
        return (level, position_of(job_id), tallies[job_id].submitted_at or 0.0, job_id)

    out: list[JobInfo] = []
    for index, job_id in enumerate(sorted(tallies, key=key)):
        tally = tallies[job_id]
        reason, code = ("", None) if tally.held or tally.waiting is None else tally.waiting
        out.append(
            JobInfo(
                job_id=job_id,
                state=JobState.SCHEDULED if tally.held else JobState.QUEUED,
                jobs_ahead=index if ranked else NO_ORDER,
                requested_slots=tally.requested,
                allocated_slots=tally.allocated,
                queue_position=position_of(job_id),
                priority=priority_of(job_id),
                weight=snapshot.group(job_id).weight,
                wait_reason=reason,
                wait_code=code,
                backfilled=tally.backfilled,
            )
        )
    return out


def _tally(snapshot: PoolSnapshot, plan: SchedulingPlan) -> dict[str, _Tally]:
    tallies: dict[str, _Tally] = {}
    for allocation in snapshot.running:
        tally = tallies.setdefault(allocation.job_id, _Tally())
        tally.add(allocation.request)
        tally.allocated += allocation.slots
        tally.held = True
    pending = {r.allocation_id: r for r in snapshot.pending}
    for request in snapshot.pending:
        tallies.setdefault(request.job_id, _Tally()).add(request)
    for start in plan.start:
        tally = tallies[_job_of(start.allocation_id, pending)]
        tally.allocated += sum(p.slots for p in start.placements)
        tally.held = True
        tally.backfilled = tally.backfilled or start.backfilled
    for waiting in plan.waiting:
        tally = tallies[_job_of(waiting.allocation_id, pending)]
        if tally.waiting is None:
            readable = waiting.detail or waiting.reason.value.replace("_", " ")
            tally.waiting = (readable, waiting.reason)
    return tallies


def _job_of(allocation_id: str, pending: dict[str, Request]) -> str:
    request = pending.get(allocation_id)
    if request is None:
        raise ValueError(f"plan names {allocation_id!r}, which is not pending in the snapshot")
    return request.job_id
