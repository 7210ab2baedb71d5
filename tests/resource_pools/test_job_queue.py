"""Job queue view: JobStats and JobOrder of scheduler_test.go (reference §1.5), properties."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resource_pools.fair_share import FairShareScheduler
from resource_pools.job_queue import (
    NO_ORDER,
    AnyScheduler,
    JobInfo,
    JobState,
    QueueStats,
    job_queue,
    queue_stats,
)
from resource_pools.priority import PriorityScheduler
from resource_pools.round_robin import RoundRobinScheduler
from resource_pools.types import (
    AgentState,
    JobSettings,
    Placement,
    PoolSnapshot,
    Request,
    RunningAllocation,
    SchedulingPlan,
    StartAllocation,
    Waiting,
    WaitReason,
)
from tests.resource_pools.test_priority import snapshots

SCHEDULERS: list[AnyScheduler] = [
    PriorityScheduler(),
    PriorityScheduler(preemption=True),
    FairShareScheduler(),
    RoundRobinScheduler(),
]
SCHEDULER_IDS = ["priority", "priority-preemption", "fair_share", "round_robin"]


def request(job: int, slots: int, task: int | None = None) -> Request:
    """Task ``task`` (default: the job's number) of job ``job``, submitted at ``job``."""
    number = job if task is None else task
    return Request(f"t{number}", f"job{job}", slots, job_submitted_at=float(job))


def one_slot_agent() -> AgentState:
    return AgentState("a1", slots=1, max_zero_slot=1)


def run(snapshot: PoolSnapshot, scheduler: AnyScheduler) -> tuple[SchedulingPlan, list[JobInfo]]:
    plan = scheduler.schedule(snapshot)
    return plan, job_queue(snapshot, plan, scheduler)


def by_id(infos: Sequence[JobInfo]) -> dict[str, JobInfo]:
    return {i.job_id: i for i in infos}


class TestJobStats:
    """JobStats: tasks are counted, not jobs, under every scheduler."""

    @pytest.mark.parametrize("scheduler", SCHEDULERS, ids=SCHEDULER_IDS)
    def test_two_slotted_two_zero_slot(self, scheduler: AnyScheduler) -> None:
        snap = PoolSnapshot(
            (one_slot_agent(),),
            pending=(request(1, 1), request(2, 1), request(3, 0), request(4, 0)),
        )
        plan, infos = run(snap, scheduler)
        assert queue_stats(snap, plan) == QueueStats(queued_count=2, scheduled_count=2)
        states = sorted(i.state for i in infos)
        assert states == [JobState.QUEUED, JobState.QUEUED, JobState.SCHEDULED, JobState.SCHEDULED]

    @pytest.mark.parametrize("scheduler", SCHEDULERS, ids=SCHEDULER_IDS)
    def test_nothing_fits(self, scheduler: AnyScheduler) -> None:
        snap = PoolSnapshot((one_slot_agent(),), pending=tuple(request(i, 2) for i in range(4)))
        plan, infos = run(snap, scheduler)
        assert queue_stats(snap, plan) == QueueStats(queued_count=4, scheduled_count=0)
        assert all(i.state is JobState.QUEUED for i in infos)
        assert all(i.wait_reason and i.wait_code is not None for i in infos)

    def test_counts_tasks_of_one_job_separately(self) -> None:
        # One job, four tasks: the job is one line of the queue but four tasks in the stats.
        snap = PoolSnapshot(
            (one_slot_agent(),),
            pending=tuple(request(1, slots, task) for task, slots in enumerate((1, 1, 0, 0))),
        )
        plan, infos = run(snap, PriorityScheduler())
        assert queue_stats(snap, plan) == QueueStats(2, 2)
        assert len(infos) == 1
        assert (infos[0].state, infos[0].wait_reason) == (JobState.SCHEDULED, "")

    def test_running_and_preempted_work_counts_as_scheduled(self) -> None:
        low = Request("low", "jlow", 1, preemptible=True, job_submitted_at=1.0)
        snap = PoolSnapshot(
            (AgentState("a1", 1, used_slots=1),),
            pending=(Request("high", "jhigh", 1, job_submitted_at=2.0),),
            running=(RunningAllocation(low, (Placement("a1", 1),)),),
            groups={"jlow": JobSettings("jlow", priority=50), "jhigh": JobSettings("jhigh", 40)},
        )
        plan, infos = run(snap, PriorityScheduler(preemption=True))
        assert [p.allocation_id for p in plan.preempt] == ["low"]
        assert queue_stats(snap, plan) == QueueStats(queued_count=1, scheduled_count=1)
        jobs = by_id(infos)
        assert jobs["jlow"].state is JobState.SCHEDULED
        assert jobs["jhigh"].wait_code is WaitReason.WAITING_FOR_PREEMPTION
        assert jobs["jhigh"].wait_reason == "preempting low"


def job_order_snapshot() -> PoolSnapshot:
    """JobOrder: four 1-slot jobs; job2 has priority 40, the others 50."""
    groups = {f"job{i}": JobSettings(f"job{i}", priority=50) for i in (1, 3, 4)}
    groups["job2"] = JobSettings("job2", priority=40)
    return PoolSnapshot(
        (AgentState("a1", slots=0),),
        pending=tuple(request(i, 1) for i in range(1, 5)),
        groups=groups,
    )


class TestJobOrder:
    def test_priority_order(self) -> None:
        _, infos = run(job_order_snapshot(), PriorityScheduler())
        assert [(i.job_id, i.jobs_ahead) for i in infos] == [
            ("job2", 0),
            ("job1", 1),
            ("job3", 2),
            ("job4", 3),
        ]
        assert [i.priority for i in infos] == [40, 50, 50, 50]

    def test_fair_share_reports_no_order(self) -> None:
        _, infos = run(job_order_snapshot(), FairShareScheduler())
        assert {i.jobs_ahead for i in infos} == {NO_ORDER}
        assert {i.job_id for i in infos} == {"job1", "job2", "job3", "job4"}

    def test_round_robin_ignores_priority(self) -> None:
        _, infos = run(job_order_snapshot(), RoundRobinScheduler())
        assert [(i.job_id, i.jobs_ahead) for i in infos] == [
            ("job1", 0),
            ("job2", 1),
            ("job3", 2),
            ("job4", 3),
        ]

    def test_scheduled_when_any_task_is_scheduled(self) -> None:
        snap = PoolSnapshot(
            (AgentState("a1", 1),), pending=(request(1, 1, task=1), request(1, 1, task=2))
        )
        _, infos = run(snap, PriorityScheduler())
        assert [(i.state, i.requested_slots, i.allocated_slots) for i in infos] == [
            (JobState.SCHEDULED, 2, 1)
        ]

    def test_priority_without_preemption(self) -> None:
        # JobOrderPriority: job1 (p50) runs; job2 (p40) cannot fit and nothing is released.
        running = RunningAllocation(request(1, 1), (Placement("a1", 1),))
        snap = PoolSnapshot(
            (AgentState("a1", slots=1, used_slots=1),),
            pending=(request(2, 1),),
            running=(running,),
            groups={"job1": JobSettings("job1", priority=50), "job2": JobSettings("job2", 40)},
        )
        plan, infos = run(snap, PriorityScheduler(preemption=False))
        assert plan.preempt == ()
        jobs = by_id(infos)
        assert (jobs["job2"].jobs_ahead, jobs["job2"].state) == (0, JobState.QUEUED)
        assert (jobs["job1"].jobs_ahead, jobs["job1"].state) == (1, JobState.SCHEDULED)
        assert jobs["job2"].wait_code is WaitReason.INSUFFICIENT_SLOTS
        assert (jobs["job1"].requested_slots, jobs["job1"].allocated_slots) == (1, 1)

    def test_queue_position_orders_within_a_priority(self) -> None:
        groups = {
            "job1": JobSettings("job1", position=30.0),
            "job2": JobSettings("job2", position=10.0),
            "job3": JobSettings("job3"),  # no position: submission time in microseconds
        }
        snap = PoolSnapshot(
            (AgentState("a1", 0),),
            pending=(request(1, 1), request(2, 1), request(3, 1)),
            groups=groups,
        )
        _, infos = run(snap, PriorityScheduler())
        assert [(i.job_id, i.queue_position) for i in infos] == [
            ("job2", 10.0),
            ("job1", 30.0),
            ("job3", 3_000_000.0),
        ]

    def test_default_priority_and_weight(self) -> None:
        snap = PoolSnapshot(
            (AgentState("a1", 0),),
            pending=(request(1, 1), request(2, 1)),
            groups={"job2": JobSettings("job2", weight=3.0, priority=10)},
        )
        _, infos = run(snap, PriorityScheduler(default_priority=60))
        assert [(i.job_id, i.priority, i.weight) for i in infos] == [
            ("job2", 10, 3.0),
            ("job1", 60, 1.0),
        ]


class TestFromAPlan:
    """Built from a hand-written plan: what each field takes from it."""

    def test_fields(self) -> None:
        running = RunningAllocation(
            Request("r1", "j1", 4, job_submitted_at=1.0), (Placement("a1", 2), Placement("a2", 2))
        )
        snap = PoolSnapshot(
            (AgentState("a1", 4, used_slots=2), AgentState("a2", 4, used_slots=2)),
            pending=(
                Request("p1", "j1", 1, job_submitted_at=1.0),
                Request("p2", "j2", 2, job_submitted_at=2.0),
                Request("p3", "j2", 0, job_submitted_at=2.0),
                Request("p4", "j3", 8, job_submitted_at=3.0),
            ),
            running=(running,),
        )
        plan = SchedulingPlan(
            start=(StartAllocation("p1", (Placement("a1", 1),), backfilled=True),),
            waiting=(
                Waiting("p3", WaitReason.AUX_CAPACITY),
                Waiting("p2", WaitReason.INSUFFICIENT_SLOTS, "2 slots requested"),
                Waiting("p4", WaitReason.EXCEEDS_POOL_CAPACITY, "too big"),
            ),
        )
        infos = job_queue(snap, plan, PriorityScheduler())
        assert infos == [
            JobInfo("j1", JobState.SCHEDULED, 0, 5, 5, 1e6, 42, 1.0, backfilled=True),
            JobInfo(
                "j2",
                JobState.QUEUED,
                1,
                2,
                0,
                2e6,
                42,
                1.0,
                "aux capacity",
                WaitReason.AUX_CAPACITY,
            ),
            JobInfo(
                "j3",
                JobState.QUEUED,
                2,
                8,
                0,
                3e6,
                42,
                1.0,
                "too big",
                WaitReason.EXCEEDS_POOL_CAPACITY,
            ),
        ]
        assert queue_stats(snap, plan) == QueueStats(queued_count=3, scheduled_count=2)

    def test_a_plan_for_another_snapshot_is_refused(self) -> None:
        snap = PoolSnapshot((AgentState("a1", 1),), pending=(request(1, 1),))
        plan = SchedulingPlan(waiting=(Waiting("other", WaitReason.NO_AGENTS),))
        with pytest.raises(ValueError, match="'other'"):
            job_queue(snap, plan, PriorityScheduler())

    def test_empty_pool(self) -> None:
        snap = PoolSnapshot((), groups={"idle": JobSettings("idle")})
        assert job_queue(snap, SchedulingPlan(), PriorityScheduler()) == []
        assert queue_stats(snap, SchedulingPlan()) == QueueStats(0, 0)


@settings(max_examples=150, deadline=None)
@given(snapshots(), st.sampled_from(SCHEDULERS))
def test_job_queue_properties(snapshot: PoolSnapshot, scheduler: AnyScheduler) -> None:
    plan = scheduler.schedule(snapshot)
    infos = job_queue(snapshot, plan, scheduler)
    jobs = [r.job_id for r in snapshot.pending] + [a.job_id for a in snapshot.running]
    # Every job with work appears exactly once.
    assert sorted(i.job_id for i in infos) == sorted(set(jobs))
    if isinstance(scheduler, FairShareScheduler):
        assert {i.jobs_ahead for i in infos} <= {NO_ORDER}
    else:
        assert [i.jobs_ahead for i in infos] == list(range(len(infos)))
    if isinstance(scheduler, PriorityScheduler):
        priorities = [i.priority for i in infos]
        assert priorities == sorted(priorities)
    started = {s.allocation_id for s in plan.start}
    held = {a.job_id for a in snapshot.running}
    held |= {r.job_id for r in snapshot.pending if r.allocation_id in started}
    for info in infos:
        assert (info.state is JobState.SCHEDULED) == (info.job_id in held)
        assert 0 <= info.allocated_slots <= info.requested_slots
        assert (info.wait_reason == "") == (info.state is JobState.SCHEDULED)
    stats = queue_stats(snapshot, plan)
    assert stats.queued_count == len(plan.waiting)
    assert stats.queued_count + stats.scheduled_count == len(snapshot.pending) + len(
        snapshot.running
    )
    # Pure: the same inputs give the same queue.
    assert job_queue(snapshot, plan, scheduler) == infos
