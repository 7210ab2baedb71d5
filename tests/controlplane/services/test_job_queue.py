"""Determined's scheduler_test.go JobStats and JobOrder scenarios (reference §1.5)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controlplane.services.job_queue import jobs_of_pass, queue_stats
from controlplane.services.scheduling.apply import Applied
from controlplane.services.scheduling.pools import PassResult
from resource_pools.config_scheduler import SchedulerType
from resource_pools.fair_share import FairShareScheduler
from resource_pools.priority import PriorityScheduler
from resource_pools.types import (
    AgentState,
    JobSettings,
    Placement,
    PoolSnapshot,
    Request,
    RunningAllocation,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCHEDULERS = [
    (SchedulerType.PRIORITY, PriorityScheduler()),
    (SchedulerType.FAIR_SHARE, FairShareScheduler()),
]


def run(snapshot: PoolSnapshot, scheduler: object) -> PassResult:
    plan = scheduler.schedule(snapshot)  # type: ignore[attr-defined]
    return PassResult("default", T0, snapshot, plan, Applied(), 0.0)


def one_slot_agent() -> AgentState:
    return AgentState(id="a1", slots=1, max_zero_slot=1)


def request(job: int, slots: int, at: float | None = None) -> Request:
    return Request(f"t{job}", f"job{job}", slots, job_submitted_at=at if at is not None else job)


@pytest.mark.parametrize(("kind", "scheduler"), SCHEDULERS)
def test_job_stats_two_slotted_two_zero_slot(kind: SchedulerType, scheduler: object) -> None:
    snap = PoolSnapshot(
        agents=(one_slot_agent(),),
        pending=(request(1, 1), request(2, 1), request(3, 0), request(4, 0)),
    )
    result = run(snap, scheduler)
    assert queue_stats(result) == (2, 2)
    states = [j.state for j in jobs_of_pass(result, kind, 42)]
    assert sorted(states) == ["QUEUED", "QUEUED", "SCHEDULED", "SCHEDULED"]


@pytest.mark.parametrize(("kind", "scheduler"), SCHEDULERS)
def test_job_stats_nothing_fits(kind: SchedulerType, scheduler: object) -> None:
    snap = PoolSnapshot(
        agents=(one_slot_agent(),), pending=tuple(request(i, 2) for i in range(1, 5))
    )
    result = run(snap, scheduler)
    assert queue_stats(result) == (4, 0)
    assert all(j.state == "QUEUED" and j.wait_reason for j in jobs_of_pass(result, kind, 42))


def test_job_order_priority_and_fair_share() -> None:
    groups = {
        "job1": JobSettings("job1", priority=50),
        "job2": JobSettings("job2", priority=40),
        "job3": JobSettings("job3", priority=50),
        "job4": JobSettings("job4", priority=50),
    }
    snap = PoolSnapshot(
        agents=(AgentState("a1", slots=0),),
        pending=tuple(request(i, 1) for i in range(1, 5)),
        groups=groups,
    )
    order = jobs_of_pass(run(snap, PriorityScheduler()), SchedulerType.PRIORITY, 42)
    assert [(j.job_id, j.jobs_ahead) for j in order] == [
        ("job2", 0),
        ("job1", 1),
        ("job3", 2),
        ("job4", 3),
    ]
    fair = jobs_of_pass(run(snap, FairShareScheduler()), SchedulerType.FAIR_SHARE, 42)
    assert {j.jobs_ahead for j in fair} == {-1}


def test_job_order_priority_without_preemption() -> None:
    running = RunningAllocation(request(1, 1), (Placement("a1", 1),))
    snap = PoolSnapshot(
        agents=(AgentState("a1", slots=1, used_slots=1),),
        pending=(request(2, 1),),
        running=(running,),
        groups={"job1": JobSettings("job1", priority=50), "job2": JobSettings("job2", priority=40)},
    )
    result = run(snap, PriorityScheduler(preemption=False))
    assert result.plan.preempt == ()
    jobs = {j.job_id: j for j in jobs_of_pass(result, SchedulerType.PRIORITY, 42)}
    assert (jobs["job2"].jobs_ahead, jobs["job2"].state) == (0, "QUEUED")
    assert (jobs["job1"].jobs_ahead, jobs["job1"].state) == (1, "SCHEDULED")
