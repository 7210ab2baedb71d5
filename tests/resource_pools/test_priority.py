"""Priority scheduler: the priority_test rows P1-P16 of reference §1.5, JobStats, properties."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resource_pools.fitting import find_fit, release, reserve
from resource_pools.priority import PriorityScheduler, queue_order_key
from resource_pools.types import (
    AgentState,
    JobSettings,
    Placement,
    PoolSnapshot,
    Request,
    RunningAllocation,
    SchedulingPlan,
    WaitReason,
)


@dataclass(frozen=True)
class Task:
    """One task in its own job; ``on`` names the agents it already runs on (split evenly)."""

    id: str
    priority: int
    slots: int
    on: tuple[str, ...] = ()
    position: float | None = None
    preemptible: bool = True


def agent(agent_id: str, slots: int = 4, max_zero: int = 100) -> AgentState:
    return AgentState(agent_id, slots, max_zero_slot=max_zero)


def build(agents: Sequence[AgentState], tasks: Sequence[Task]) -> PoolSnapshot:
    """Tasks in listing order are submitted at 0, 1, 2...; started ones reserve their agents."""
    state = tuple(agents)
    pending: list[Request] = []
    running: list[RunningAllocation] = []
    for index, task in enumerate(tasks):
        request = Request(
            task.id,
            f"job-{task.id}",
            task.slots,
            preemptible=task.preemptible,
            job_submitted_at=float(index),
            requested_at=float(index),
        )
        if not task.on:
            pending.append(request)
            continue
        share = task.slots // len(task.on)
        placements = tuple(Placement(agent_id, share) for agent_id in task.on)
        state = reserve(state, placements, request)
        running.append(RunningAllocation(request, placements))
    groups = {
        f"job-{t.id}": JobSettings(f"job-{t.id}", priority=t.priority, position=t.position)
        for t in tasks
    }
    return PoolSnapshot(state, tuple(pending), tuple(running), groups)


def advance(
    snapshot: PoolSnapshot,
    plan: SchedulingPlan,
    *,
    finished: Sequence[str] = (),
    added: Sequence[Task] = (),
) -> PoolSnapshot:
    """The next pass: started requests run, ``finished`` ones free their agents, ``added`` queue."""
    by_id = {r.allocation_id: r for r in snapshot.pending}
    running = list(snapshot.running)
    running += [RunningAllocation(by_id[s.allocation_id], s.placements) for s in plan.start]
    agents = snapshot.agents
    for started in plan.start:
        agents = reserve(agents, started.placements, by_id[started.allocation_id])
    for done in [a for a in running if a.allocation_id in finished]:
        agents = release(agents, done.placements)
    running = [a for a in running if a.allocation_id not in finished]
    started_ids = {s.allocation_id for s in plan.start}
    pending = [r for r in snapshot.pending if r.allocation_id not in started_ids]
    groups = dict(snapshot.groups)
    base = len(snapshot.pending) + len(snapshot.running) + 100
    for offset, task in enumerate(added):
        job = f"job-{task.id}"
        groups[job] = JobSettings(job, priority=task.priority, position=task.position)
        when = float(base + offset)
        pending.append(Request(task.id, job, task.slots, True, when, when))
    return PoolSnapshot(agents, tuple(pending), tuple(running), groups)


def started(plan: SchedulingPlan) -> set[str]:
    return {s.allocation_id for s in plan.start}


def preempted(plan: SchedulingPlan) -> set[str]:
    return {p.allocation_id for p in plan.preempt}


def reasons(plan: SchedulingPlan) -> dict[str, WaitReason]:
    return {w.allocation_id: w.reason for w in plan.waiting}


def schedule(snapshot: PoolSnapshot, *, preemption: bool = False) -> SchedulingPlan:
    plan = PriorityScheduler(preemption, 42).schedule(snapshot)
    assert plan.is_total_for(snapshot.pending)
    return plan


TWO = (agent("a1"), agent("a2"))

# --- single-pass rows: (id, preemption, agents, tasks, expected starts, expected preempts) ----
ROWS = [
    (
        "P2 MaxZeroSlotContainer",
        False,
        (agent("a1", 4, max_zero=0),),
        [Task("t4", 40, 4), Task("t0", 50, 0)],
        {"t4"},
        set(),
    ),
    (
        "P3 PreemptionDisabled",
        False,
        TWO,
        [
            *(Task(f"low{s}", 50, s) for s in (4, 1, 0)),
            *(Task(f"high{s}", 40, s) for s in (1, 0, 4)),
        ],
        {"low1", "low0", "high1", "high0", "high4"},
        set(),
    ),
    (
        "P4 HigherPriorityBlocksLowerPriority",
        False,
        TWO,
        [Task("low4", 50, 4), Task("low1", 50, 1), Task("high12", 40, 12)],
        set(),
        set(),
    ),
    (
        "P11 Preemption",
        True,
        TWO,
        [
            Task("run45", 45, 4, ("a1",)),
            Task("run40", 40, 4, ("a2",)),
            Task("p40_4", 40, 4),
            Task("p40_8", 40, 8),
            Task("p50_1", 50, 1),
        ],
        set(),
        {"run45"},
    ),
    (
        "P12 Backfilling",
        True,
        TWO,
        [
            Task("run55", 55, 1, ("a1",)),
            Task("run40", 40, 4, ("a2",)),
            Task("p50", 50, 1),
            Task("p45", 45, 1),
            Task("p40_2", 40, 2),
            Task("p40_8", 40, 8),
        ],
        {"p40_2", "p45"},
        {"run55"},
    ),
    (
        "P13 PreemptionZeroSlotTask",
        True,
        (agent("a1", max_zero=1), agent("a2", max_zero=1)),
        [
            Task("run45", 45, 0, ("a1",)),
            Task("run40", 40, 0, ("a2",)),
            Task("p50", 50, 0),
            Task("p40", 40, 0),
        ],
        set(),
        {"run45"},
    ),
    (
        "P14 BackfillingZeroSlotTask",
        True,
        (agent("a1", max_zero=4), agent("a2", max_zero=1)),
        [
            Task("run40", 40, 0, ("a1",)),
            Task("run50", 50, 0, ("a1",)),
            Task("p55", 55, 0),
            Task("p45", 45, 0),
        ],
        {"p55", "p45"},
        set(),
    ),
    (
        "P15 PreemptOneByPosition",
        True,
        TWO,
        [
            Task("job1", 42, 1, ("a1",), position=1),
            Task("job2", 42, 4, ("a2",), position=2),
            Task("job3", 42, 4, position=1.5),
        ],
        set(),
        {"job2"},
    ),
    (
        "P15 PreemptOneByPosition, equal positions",
        True,
        TWO,
        [
            Task("job1", 42, 1, ("a1",), position=1),
            Task("job2", 42, 4, ("a2",), position=1),
            Task("job3", 42, 4, position=0.999),
        ],
        set(),
        {"job2"},
    ),
    (
        "P16 NoPreemptionByPosition",
        True,
        TWO,
        [
            Task("job1", 42, 1, ("a1",), position=1),
            Task("job2", 42, 4, ("a2",), position=2),
            Task("job3", 42, 8, position=1.5),
        ],
        set(),
        set(),
    ),
    (
        "JobStats: 2 slotted and 2 zero-slot tasks on A(1, maxZero 1)",
        False,
        (agent("a1", 1, max_zero=1),),
        [Task("s1", 42, 1), Task("s2", 42, 1), Task("z1", 42, 0), Task("z2", 42, 0)],
        {"s1", "z1"},
        set(),
    ),
    (
        "JobStats: 4 tasks of 2 slots on A(1)",
        False,
        (agent("a1", 1, max_zero=1),),
        [Task(f"t{i}", 42, 2) for i in range(4)],
        set(),
        set(),
    ),
    (
        "JobOrderPriority: p40 cannot fit, p50 keeps running (preemption off)",
        False,
        (agent("a1", 1),),
        [Task("job1", 50, 1, ("a1",)), Task("job2", 40, 1)],
        set(),
        set(),
    ),
]


@pytest.mark.parametrize(
    ("preemption", "agents", "tasks", "starts", "preempts"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_priority_rows(
    preemption: bool,
    agents: tuple[AgentState, ...],
    tasks: list[Task],
    starts: set[str],
    preempts: set[str],
) -> None:
    snapshot = build(agents, tasks)
    plan = schedule(snapshot, preemption=preemption)
    assert started(plan) == starts
    assert preempted(plan) == preempts


def test_p3_leaves_the_snapshot_agents_unchanged() -> None:
    snapshot = build(TWO, [Task("a", 50, 4), Task("b", 40, 1)])
    before = snapshot.agents
    schedule(snapshot)
    assert snapshot.agents == before == TWO


def test_p4_reasons_name_the_blocker() -> None:
    snapshot = build(TWO, [Task("low4", 50, 4), Task("low1", 50, 1), Task("high12", 40, 12)])
    plan = schedule(snapshot)
    waits = {w.allocation_id: w for w in plan.waiting}
    assert waits["high12"].reason is WaitReason.EXCEEDS_POOL_CAPACITY
    assert waits["low1"].reason is WaitReason.BLOCKED_BY_HIGHER_PRIORITY
    assert waits["low1"].detail.startswith("behind priority 40 job job-high12")


def test_p11_reasons() -> None:
    _, preemption, agents, tasks, _, _ = ROWS[3]
    plan = schedule(build(agents, tasks), preemption=preemption)
    assert reasons(plan)["p40_4"] is WaitReason.WAITING_FOR_PREEMPTION
    assert "run45" in {w.allocation_id: w.detail for w in plan.waiting}["p40_4"]
    assert reasons(plan)["p40_8"] is not WaitReason.WAITING_FOR_PREEMPTION


def test_p12_marks_only_the_lower_level_start_as_backfilled() -> None:
    _, preemption, agents, tasks, _, _ = ROWS[4]
    plan = schedule(build(agents, tasks), preemption=preemption)
    assert {s.allocation_id: s.backfilled for s in plan.start} == {"p40_2": False, "p45": True}
    assert reasons(plan)["p50"] is WaitReason.WAITING_FOR_PREEMPTION


def test_backfilling_with_preemption_skips_non_preemptible() -> None:
    tasks = [Task("big", 40, 12), Task("trial", 50, 1), Task("shell", 50, 1, preemptible=False)]
    plan = schedule(build(TWO, tasks), preemption=True)
    assert started(plan) == {"trial"}
    assert reasons(plan)["shell"] is WaitReason.BLOCKED_BY_HIGHER_PRIORITY


def test_no_start_in_a_pass_that_decided_a_preemption() -> None:
    agents = (agent("a1"), agent("a2"), agent("a3", 2))
    tasks = [
        Task("run4", 50, 4, ("a1",)),
        Task("run2", 50, 2, ("a2",)),
        Task("urgent", 40, 4),
        Task("filler", 60, 1),
    ]
    plan = schedule(build(agents, tasks), preemption=True)
    assert started(plan) == set()
    assert preempted(plan) == {"run2"}
    held = {w.allocation_id: w for w in plan.waiting}["filler"]
    assert held.reason is WaitReason.BLOCKED_BY_HIGHER_PRIORITY
    assert held.detail == "behind priority 40 job job-urgent, which waits for a preemption"


def test_non_preemptible_allocations_are_never_victims() -> None:
    tasks = [Task("shell", 50, 4, ("a1",), preemptible=False), Task("urgent", 40, 4)]
    plan = schedule(build((agent("a1"),), tasks), preemption=True)
    assert preempted(plan) == set()
    assert reasons(plan)["urgent"] is WaitReason.INSUFFICIENT_SLOTS


# --- P1: ordering -------------------------------------------------------------------------------


def test_p1_queue_order_key_sorts_by_position_then_times_then_id() -> None:
    requests = [
        Request("d", "j4", 1, job_submitted_at=1.0, requested_at=1.0),
        Request("c", "j3", 1, job_submitted_at=1.0, requested_at=1.0),
        Request("b", "j2", 1, job_submitted_at=1.0, requested_at=0.5),
        Request("a", "j1", 1, job_submitted_at=2.0, requested_at=0.0),
        Request("e", "j5", 1, job_submitted_at=9.0),
    ]
    snapshot = PoolSnapshot((), tuple(requests), groups={"j5": JobSettings("j5", position=1.0)})
    ordered = sorted(requests, key=lambda r: queue_order_key(snapshot, r))
    assert [r.allocation_id for r in ordered] == ["e", "b", "c", "d", "a"]


@pytest.mark.parametrize(
    ("tasks", "winner"),
    [
        ([Task("young", 50, 1, position=2), Task("old", 50, 1, position=1)], "old"),
        ([Task("older", 50, 1), Task("newer", 50, 1)], "older"),
        ([Task("low", 50, 1), Task("high", 40, 1)], "high"),
    ],
    ids=["position first", "older submission first", "priority beats age"],
)
def test_p1_order_decides_who_gets_the_slot(tasks: list[Task], winner: str) -> None:
    assert started(schedule(build((agent("a1", 1),), tasks))) == {winner}


def test_p1_zero_slot_and_slotted_tasks_are_separate_passes() -> None:
    tasks = [Task("z1", 40, 0), Task("z2", 40, 0), Task("slotted", 50, 1)]
    plan = schedule(build((agent("a1", 1, max_zero=1),), tasks))
    assert started(plan) == {"z1", "slotted"}
    assert reasons(plan)["z2"] is WaitReason.AUX_CAPACITY


def test_p1_scheduled_tasks_are_not_placed_again() -> None:
    snapshot = build((agent("a1", 1),), [Task("running", 50, 1, ("a1",)), Task("new", 50, 1)])
    plan = schedule(snapshot)
    assert started(plan) == set()
    assert [w.allocation_id for w in plan.waiting] == ["new"]


# --- multi-pass rows ----------------------------------------------------------------------------


def test_p5_add_tasks_after_p3() -> None:
    _, _, agents, tasks, _, _ = ROWS[1]
    first = build(agents, tasks)
    added = [Task(f"new{i}", 50, 1) for i in range(3)]
    second = advance(first, schedule(first), added=added)
    plan = schedule(second)
    assert started(plan) == {"new0", "new1"}
    assert reasons(plan)["low4"] is WaitReason.INSUFFICIENT_SLOTS


def test_p6_all_slots_allocated() -> None:
    full = build(TWO, [Task("r1", 50, 4, ("a1",)), Task("r2", 50, 4, ("a2",))])
    plan = schedule(advance(full, SchedulingPlan(), added=[Task("x", 40, 1), Task("y", 40, 1)]))
    assert started(plan) == set() and preempted(plan) == set()


def test_p7_lower_priority_must_wait() -> None:
    tasks = [Task("low", 50, 1), *(Task(f"h{i}", 40, 1) for i in range(3)), Task("h2slots", 40, 2)]
    first = build((agent("a1"),), tasks)
    round1 = schedule(first)
    assert started(round1) == {"h0", "h1", "h2"}
    second = advance(first, round1)
    round2 = schedule(second)
    assert started(round2) == set()
    assert reasons(round2)["low"] is WaitReason.BLOCKED_BY_HIGHER_PRIORITY
    third = advance(second, round2, finished=["h0", "h1", "h2"])
    assert started(schedule(third)) == {"h2slots", "low"}


def test_p8_task_finished() -> None:
    first = build((agent("a1"),), [Task("big", 42, 4)])
    plan = schedule(first)
    assert started(plan) == {"big"}
    added = [Task("x", 42, 1), Task("y", 42, 1), Task("z", 42, 0)]
    assert started(schedule(advance(first, plan, finished=["big"], added=added))) == {"x", "y", "z"}


def test_p9_all_tasks_finished() -> None:
    first = build(TWO, [Task("w1", 42, 4), Task("w2", 42, 4)])
    plan = schedule(first)
    added = [Task("low", 50, 4), Task("high", 40, 4)]
    after = advance(first, plan, finished=["w1", "w2"], added=added)
    assert started(schedule(after)) == {"low", "high"}


def test_p10_zero_slot_task() -> None:
    first = build((agent("a1", 4, max_zero=1),), [Task("z1", 50, 0), Task("z2", 50, 0)])
    plan = schedule(first)
    assert started(plan) == {"z1"}
    later = schedule(advance(first, plan, added=[Task("urgent", 40, 0)]))
    assert started(later) == set() and preempted(later) == set()


# --- properties ---------------------------------------------------------------------------------

PRIORITIES = st.sampled_from([30, 40, 42, 50])
SLOTS = st.sampled_from([0, 0, 1, 1, 2, 3, 4, 8])


@st.composite
def snapshots(draw: st.DrawFn) -> PoolSnapshot:
    """Random pools whose running allocations were placed by find_fit, so usage is consistent."""
    sizes = draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]), min_size=1, max_size=4))
    agents = tuple(
        AgentState(f"a{i}", size, max_zero_slot=draw(st.integers(0, 3)))
        for i, size in enumerate(sizes)
    )
    jobs = draw(st.integers(1, 5))
    groups = {
        f"j{j}": JobSettings(
            f"j{j}",
            priority=draw(st.none() | PRIORITIES),
            position=draw(st.none() | st.floats(0, 10)),
        )
        for j in range(jobs)
    }
    running: list[RunningAllocation] = []
    for i in range(draw(st.integers(0, 5))):
        request = _random_request(draw, f"run{i}", jobs, ())
        fit = find_fit(request, agents)
        if fit is not None:
            agents = reserve(agents, fit, request)
            running.append(RunningAllocation(request, fit))
    agent_ids = tuple(a.id for a in agents)
    pending = [
        _random_request(draw, f"p{i}", jobs, agent_ids) for i in range(draw(st.integers(0, 8)))
    ]
    agents = tuple(
        replace(
            a,
            enabled=draw(st.booleans() | st.just(True)),
            draining=draw(st.just(False) | st.booleans()),
        )
        for a in agents
    )
    return PoolSnapshot(agents, tuple(pending), tuple(running), groups)


def _random_request(
    draw: st.DrawFn, allocation_id: str, jobs: int, agent_ids: tuple[str, ...]
) -> Request:
    job = draw(st.integers(0, jobs - 1))
    blocked = (
        draw(st.frozensets(st.sampled_from(agent_ids), max_size=1)) if agent_ids else frozenset()
    )
    return Request(
        allocation_id,
        f"j{job}",
        draw(SLOTS),
        preemptible=draw(st.booleans()),
        job_submitted_at=float(job),
        requested_at=draw(st.floats(0, 5)),
        blocked_agents=blocked,
    )


def apply_plan(snapshot: PoolSnapshot, plan: SchedulingPlan) -> tuple[AgentState, ...]:
    """Agents after the plan: victims released, then each start reserved (raises on over-commit)."""
    victims = {p.allocation_id for p in plan.preempt}
    agents = snapshot.agents
    for allocation in snapshot.running:
        if allocation.allocation_id in victims:
            agents = release(agents, allocation.placements)
    by_id = {r.allocation_id: r for r in snapshot.pending}
    for start in plan.start:
        agents = reserve(agents, start.placements, by_id[start.allocation_id])
    return agents


@settings(max_examples=300)
@given(snapshots(), st.booleans())
def test_plan_is_total_safe_and_preempts_only_preemptible(
    snapshot: PoolSnapshot, preemption: bool
) -> None:
    plan = PriorityScheduler(preemption, 42).schedule(snapshot)
    assert plan.is_total_for(snapshot.pending)
    apply_plan(snapshot, plan)
    running = {a.allocation_id: a for a in snapshot.running}
    victims = [p.allocation_id for p in plan.preempt]
    assert len(victims) == len(set(victims))
    assert all(running[v].request.preemptible for v in victims)
    if not preemption:
        assert victims == []


@settings(max_examples=300)
@given(snapshots())
def test_no_lower_priority_start_while_a_fitting_higher_priority_task_waits(
    snapshot: PoolSnapshot,
) -> None:
    scheduler = PriorityScheduler(False, 42)
    plan = scheduler.schedule(snapshot)
    by_id = {r.allocation_id: r for r in snapshot.pending}
    for waiting in plan.waiting:
        request = by_id[waiting.allocation_id]
        if scheduler.fit(request, snapshot.agents) is None:
            continue
        # The two passes are independent by design (§1.3): compare within one kind only.
        for start in plan.start:
            other = by_id[start.allocation_id]
            if other.is_zero_slot == request.is_zero_slot:
                assert scheduler.priority_of(snapshot, other) <= scheduler.priority_of(
                    snapshot, request
                )


@settings(max_examples=200)
@given(snapshots(), st.booleans())
def test_same_snapshot_same_plan_whatever_the_input_order(
    snapshot: PoolSnapshot, preemption: bool
) -> None:
    scheduler = PriorityScheduler(preemption, 42)
    shuffled = PoolSnapshot(
        snapshot.agents[::-1], snapshot.pending[::-1], snapshot.running[::-1], snapshot.groups
    )
    assert scheduler.schedule(snapshot) == scheduler.schedule(snapshot)
    assert scheduler.schedule(shuffled) == scheduler.schedule(snapshot)
