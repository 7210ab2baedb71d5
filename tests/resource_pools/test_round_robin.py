"""Round-robin scheduler: jobs take turns, FIFO within a job, misfits skipped, no preemption."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings

from resource_pools.round_robin import RoundRobinScheduler, job_turns
from resource_pools.types import (
    AgentState,
    Placement,
    PoolSnapshot,
    Request,
    RunningAllocation,
    SchedulingPlan,
    WaitReason,
)
from tests.resource_pools.test_priority import apply_plan, snapshots


def req(allocation_id: str, job: str, slots: int, submitted: float, requested: float) -> Request:
    return Request(allocation_id, job, slots, True, submitted, requested)


def run(agents: Sequence[AgentState], pending: Sequence[Request]) -> SchedulingPlan:
    snapshot = PoolSnapshot(tuple(agents), tuple(pending))
    plan = RoundRobinScheduler().schedule(snapshot)
    assert plan.is_total_for(snapshot.pending)
    return plan


def start_order(plan: SchedulingPlan) -> list[str]:
    return [s.allocation_id for s in plan.start]


# (id, agents, pending, expected start order, expected waiting reasons)
ROWS = [
    (
        "two jobs alternate",
        [AgentState("a1", 3)],
        [
            *(req(f"a{i}", "job-a", 1, 1.0, float(i)) for i in range(3)),
            *(req(f"b{i}", "job-b", 1, 2.0, float(i)) for i in range(2)),
        ],
        ["a0", "b0", "a1"],
        {"b1": WaitReason.INSUFFICIENT_SLOTS, "a2": WaitReason.INSUFFICIENT_SLOTS},
    ),
    (
        "FIFO within a job, whatever the listing order",
        [AgentState("a1", 2)],
        [
            req("late", "job", 1, 1.0, 9.0),
            req("early", "job", 1, 1.0, 1.0),
            req("mid", "job", 1, 1.0, 5.0),
        ],
        ["early", "mid"],
        {"late": WaitReason.INSUFFICIENT_SLOTS},
    ),
    (
        "a big task that does not fit does not block others",
        [AgentState("a1", 4)],
        [
            req("huge", "job-a", 8, 1.0, 0.0),
            req("small", "job-a", 1, 1.0, 1.0),
            req("b", "job-b", 2, 2.0, 0.0),
        ],
        ["b", "small"],
        {"huge": WaitReason.EXCEEDS_POOL_CAPACITY},
    ),
    (
        "jobs take turns by first submission, not by id or listing order",
        [AgentState("a1", 2)],
        [
            req("z", "job-z", 1, 5.0, 0.0),
            req("y", "job-y", 1, 3.0, 0.0),
            req("x", "job-x", 1, 4.0, 0.0),
        ],
        ["y", "x"],
        {"z": WaitReason.INSUFFICIENT_SLOTS},
    ),
    (
        "zero-slot tasks need an aux-container place",
        [AgentState("a1", 1, max_zero_slot=1)],
        [
            req("z1", "job-a", 0, 1.0, 0.0),
            req("z2", "job-b", 0, 2.0, 0.0),
            req("s", "job-a", 1, 1.0, 1.0),
        ],
        ["z1", "s"],
        {"z2": WaitReason.AUX_CAPACITY},
    ),
]


@pytest.mark.parametrize(
    ("agents", "pending", "order", "waits"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_round_robin_rows(
    agents: list[AgentState],
    pending: list[Request],
    order: list[str],
    waits: dict[str, WaitReason],
) -> None:
    plan = run(agents, pending)
    assert start_order(plan) == order
    assert {w.allocation_id: w.reason for w in plan.waiting} == waits
    assert all(w.detail for w in plan.waiting)


def test_job_turns_groups_by_job_in_submission_order() -> None:
    pending = [
        req("b1", "b", 1, 2.0, 1.0),
        req("a1", "a", 1, 2.0, 0.0),
        req("b0", "b", 1, 2.0, 0.0),
    ]
    turns = job_turns(pending)
    assert [[r.allocation_id for r in queue] for queue in turns] == [["a1"], ["b0", "b1"]]


def test_never_preempts_even_for_waiting_work() -> None:
    busy = AgentState("a1", 4, used_slots=4)
    running = RunningAllocation(req("old", "job-old", 4, 0.0, 0.0), (Placement("a1", 4),))
    snapshot = PoolSnapshot((busy,), (req("new", "job-new", 1, 1.0, 0.0),), (running,))
    plan = RoundRobinScheduler().schedule(snapshot)
    assert plan.preempt == () and plan.start == ()
    assert plan.waiting[0].reason is WaitReason.INSUFFICIENT_SLOTS


@settings(max_examples=300)
@given(snapshots())
def test_plan_is_total_safe_and_deterministic(snapshot: PoolSnapshot) -> None:
    scheduler = RoundRobinScheduler()
    plan = scheduler.schedule(snapshot)
    assert plan.is_total_for(snapshot.pending)
    assert plan.preempt == ()
    apply_plan(snapshot, plan)
    shuffled = PoolSnapshot(
        snapshot.agents[::-1], snapshot.pending[::-1], snapshot.running, snapshot.groups
    )
    assert scheduler.schedule(shuffled) == plan


def test_queue_position_decides_whose_turn_comes_first() -> None:
    from resource_pools.round_robin import RoundRobinScheduler
    from resource_pools.types import AgentState, JobSettings, PoolSnapshot, Request

    pending = (
        Request("a1", "ja", 1, job_submitted_at=1),
        Request("b1", "jb", 1, job_submitted_at=2),
    )
    agent = (AgentState("x", slots=1),)
    plain = RoundRobinScheduler().schedule(PoolSnapshot(agents=agent, pending=pending))
    assert [s.allocation_id for s in plain.start] == ["a1"]
    moved = PoolSnapshot(
        agents=agent,
        pending=pending,
        groups={"ja": JobSettings("ja", position=5.0), "jb": JobSettings("jb", position=1.0)},
    )
    assert [s.allocation_id for s in RoundRobinScheduler().schedule(moved).start] == ["b1"]
