"""Fair-share scheduler: the fair_share_test rows F1-F17 of reference §1.5, offers, properties."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resource_pools.fair_share import FairShareScheduler, GroupState, compute_offers
from resource_pools.fitting import find_fit, release, reserve
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
    """One task; ``on`` is the agent it already runs on ("[alloc]"), None while pending."""

    id: str
    job: str
    slots: int = 1
    on: str | None = None
    preemptible: bool = True
    blocked: frozenset[str] = frozenset()


def own(
    task_id: str,
    slots: int = 1,
    on: str | None = None,
    preemptible: bool = True,
    blocked: frozenset[str] = frozenset(),
) -> Task:
    """A task in its own job (Determined's nil group); ``build`` gives it weight 0."""
    return Task(task_id, f"job-{task_id}", slots, on, preemptible, blocked)


def build(
    agents: Mapping[str, int],
    tasks: Sequence[Task],
    groups: Mapping[str, tuple[float, int | None]] | None = None,
) -> PoolSnapshot:
    """Jobs are submitted in order of first appearance; "[alloc]" tasks use their agent.

    Like Determined's tests, allocated tasks may exceed their agent (``used_slots`` is set, not
    reserved). Jobs missing from ``groups`` are own groups with weight 0.
    """
    first_seen: dict[str, float] = {}
    pending: list[Request] = []
    running: list[RunningAllocation] = []
    used = dict.fromkeys(agents, 0)
    for index, task in enumerate(tasks):
        submitted = first_seen.setdefault(task.job, float(len(first_seen)))
        request = Request(
            task.id,
            task.job,
            task.slots,
            preemptible=task.preemptible,
            job_submitted_at=submitted,
            requested_at=float(index),
            blocked_agents=task.blocked,
        )
        if task.on is None:
            pending.append(request)
            continue
        used[task.on] += task.slots
        running.append(RunningAllocation(request, (Placement(task.on, task.slots),)))
    settings_by_job = {job: JobSettings(job, weight=0.0) for job in first_seen}
    for job, (weight, max_slots) in (groups or {}).items():
        settings_by_job[job] = JobSettings(job, weight=weight, max_slots=max_slots)
    state = tuple(AgentState(a, slots, used_slots=used[a]) for a, slots in agents.items())
    return PoolSnapshot(state, tuple(pending), tuple(running), settings_by_job)


def decided(plan: SchedulingPlan) -> tuple[set[str], set[str]]:
    return {s.allocation_id for s in plan.start}, {p.allocation_id for p in plan.preempt}


def t(
    task_id: str,
    job: str,
    slots: int = 1,
    on: str | None = None,
    preemptible: bool = True,
    blocked: frozenset[str] = frozenset(),
) -> Task:
    return Task(task_id, job, slots, on, preemptible, blocked)


B0 = frozenset({"a0"})
B01 = frozenset({"a0", "a1"})
B23 = frozenset({"a2", "a3"})
ALLOC_4 = [t(f"t{i}", "g1", on="a0") for i in range(1, 5)]

ROWS = [
    (
        "F1 max slots",
        {"a0": 4},
        [t(f"task{i}", "g1") for i in range(1, 5)] + [t(f"task{i}", "g2") for i in range(5, 9)],
        {"g1": (1, 1), "g2": (0, None)},
        {"task1", "task5", "task6", "task7"},
        set(),
    ),
    (
        "F2 weights",
        {"a0": 8},
        [t(f"t{i}", "g1") for i in range(1, 4)] + [t(f"t{i}", "g2") for i in range(4, 11)],
        {"g1": (10, 100), "g2": (30, 100)},
        {"t1", "t2", "t4", "t5", "t6", "t7", "t8", "t9"},
        set(),
    ),
    (
        "F3 multi slot",
        {"a0": 4, "a1": 4},
        [t("t1", "g1", 4), t("t2", "g2", 4)],
        {"g1": (1, None), "g2": (1, None)},
        {"t1", "t2"},
        set(),
    ),
    ("F4 max slots release", {"a0": 4}, ALLOC_4, {"g1": (1, 2)}, set(), {"t1", "t2"}),
    (
        "F5 unscheduled, allocated on two agents",
        {"a0": 2, "a1": 2},
        [t("t1", "g1", 2), t("t2", "g1", on="a0"), t("t3", "g1", on="a1")],
        {"g1": (1, 2)},
        set(),
        set(),
    ),
    (
        "F5 unscheduled, allocated on one agent",
        {"a0": 2, "a1": 2},
        [t("t1", "g1", 2), t("t2", "g1", on="a0"), t("t3", "g1", on="a0")],
        {"g1": (1, 2)},
        set(),
        set(),
    ),
    (
        "F6 multi slot deadlock",
        {"a0": 2},
        [t("t1", "g1", 2), t("t2", "g2", 2)],
        {"g1": (1, None), "g2": (1, None)},
        {"t1"},
        set(),
    ),
    (
        "F7 big task",
        {"a0": 4},
        [t("t1", "g1", 5), t("t2", "g2", 4)],
        {"g1": (1, None), "g2": (1, None)},
        {"t2"},
        set(),
    ),
    *[
        (
            f"F8 active tasks, allocated on {where}",
            {"a0": 4, "a1": 3},
            [
                t("t1", "g1", 3),
                t("t2", "g2"),
                t("t3", "g2", on=where),
                t("t4", "g3", 4),
                t("t5", "g4"),
            ],
            {g: (1, None) for g in ("g1", "g2", "g3", "g4")},
            {"t1", "t2", "t5"},
            set(),
        )
        for where in ("a0", "a1")
    ],
    ("F9 nil group", {"a0": 4}, [own("t1", 4, on="a0"), own("t2", on="a0")], {}, set(), {"t1"}),
    ("F10 preemptible", {"a0": 1}, [own("t1", on="a0"), own("t2", on="a0")], {}, set(), {"t2"}),
    (
        "F11 non-preemptible in a group",
        {"a0": 1},
        [t("t1", "g1", on="a0"), t("t2", "g1", on="a0", preemptible=False)],
        {"g1": (1, 2)},
        set(),
        {"t1"},
    ),
    (
        "F11 non-preemptible in a group, reversed",
        {"a0": 1},
        [t("t1", "g1", on="a0", preemptible=False), t("t2", "g1", on="a0")],
        {"g1": (1, 2)},
        set(),
        {"t2"},
    ),
    (
        "F12 non-preemptible, own groups",
        {"a0": 1},
        [own("t1", on="a0"), own("t2", on="a0", preemptible=False)],
        {},
        set(),
        {"t1"},
    ),
    (
        "F12 non-preemptible, own groups, reversed",
        {"a0": 1},
        [own("t1", on="a0", preemptible=False), own("t2", on="a0")],
        {},
        set(),
        {"t2"},
    ),
    (
        "F13 blocklist",
        {"a0": 1},
        [t("t0", "g0", blocked=B0), t("t1", "g1")],
        {"g0": (1, None), "g1": (1, None)},
        {"t1"},
        set(),
    ),
    (
        "F15 blocklist preemptible",
        {"a0": 1, "a1": 1},
        [
            own("t0", blocked=B01),
            own("t1", on="a0"),
            own("t2", blocked=B0),
            own("t3", on="a1"),
        ],
        {},
        {"t2"},
        {"t3"},
    ),
    (
        "F16 blocklist, do not preempt",
        {"a0": 1},
        [own(f"t{i}", blocked=B0) for i in range(3)] + [own("t3", on="a0")],
        {},
        set(),
        set(),
    ),
    (
        "F17 blocklist equal",
        {"a0": 1},
        [own("t0", blocked=B0)] + [own(f"t{i}", on="a0") for i in range(1, 4)],
        {},
        set(),
        {"t2", "t3"},
    ),
]


@pytest.mark.parametrize(
    ("agents", "tasks", "groups", "starts", "preempts"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_fair_share_rows(
    agents: Mapping[str, int],
    tasks: Sequence[Task],
    groups: Mapping[str, tuple[float, int | None]],
    starts: set[str],
    preempts: set[str],
) -> None:
    snapshot = build(agents, tasks, groups)
    plan = FairShareScheduler().schedule(snapshot)
    assert decided(plan) == (starts, preempts)
    assert plan.is_total_for(snapshot.pending)


def test_f14_blocklist_multiple_starts_only_what_fits_together() -> None:
    # Determined returns both and its pool loop refuses the second; we refuse it in the plan.
    agents = {f"a{i}": 4 for i in range(4)}
    snapshot = build(agents, [own("t1", 8, blocked=B23), own("t2", 8, blocked=B23)])
    plan = FairShareScheduler().schedule(snapshot)
    assert decided(plan) == ({"t1"}, set())
    assert {p.agent_id for p in plan.start[0].placements} == {"a0", "a1"}
    assert [(w.allocation_id, w.reason) for w in plan.waiting] == [
        ("t2", WaitReason.INSUFFICIENT_SLOTS)
    ]


def test_waiting_reasons_are_readable() -> None:
    snapshot = build(
        {"a0": 8},
        [t(f"t{i}", "g1") for i in range(1, 4)]
        + [t(f"t{i}", "g2") for i in range(4, 11)]
        + [t("big", "g3", 9), t("blocked", "g4", blocked=B0)],
        {"g1": (10, 100), "g2": (30, 100)},
    )
    waiting = {w.allocation_id: w for w in FairShareScheduler().schedule(snapshot).waiting}
    assert waiting["t3"].reason is WaitReason.OVER_FAIR_SHARE
    assert waiting["t3"].detail == "job g1 is offered 2 of 8 slots and uses 2"
    assert waiting["t10"].detail == "job g2 is offered 6 of 8 slots and uses 6"
    assert waiting["big"].reason is WaitReason.EXCEEDS_POOL_CAPACITY
    assert waiting["blocked"].reason is WaitReason.BLOCKED_NODES


def test_zero_slot_requests_start_while_aux_places_last() -> None:
    agents = (AgentState("a0", 1, used_slots=1, max_zero_slot=2),)
    pending = tuple(Request(f"z{i}", f"job-z{i}", 0, requested_at=i) for i in range(3))
    plan = FairShareScheduler().schedule(PoolSnapshot(agents, pending))
    assert decided(plan) == ({"z0", "z1"}, set())
    assert [(w.allocation_id, w.reason) for w in plan.waiting] == [("z2", WaitReason.AUX_CAPACITY)]


def test_job_over_its_offer_does_not_start_its_pending_work() -> None:
    snapshot = build(
        {"a0": 4},
        [t("r1", "g1", 2, on="a0"), t("r2", "g1", 2, on="a0"), t("p1", "g1", 1)],
        {"g1": (1, 3)},
    )
    plan = FairShareScheduler().schedule(snapshot)
    assert decided(plan) == (set(), {"r1"})
    assert plan.waiting[0].reason is WaitReason.OVER_FAIR_SHARE


def g(
    job: str,
    demand: int,
    weight: float = 1.0,
    active: int = 0,
    presubscribed: int = 0,
    registered_at: float = 0.0,
    smallest_pending: int | None = None,
) -> GroupState:
    return GroupState(job, demand, weight, active, presubscribed, registered_at, smallest_pending)


OFFER_ROWS = [
    ("F2 weights 10:30", [g("a", 3, weight=10), g("b", 7, weight=30, registered_at=1)], 8,
     {"a": 2, "b": 6}),
    ("all weights zero: a slot each per round", [g("a", 4, weight=0), g("b", 4, weight=0)], 6,
     {"a": 3, "b": 3}),
    ("smaller demand wins the odd slot", [g("a", 4), g("b", 3, registered_at=1)], 5,
     {"a": 2, "b": 3}),
    ("max_slots-capped demand frees the rest", [g("a", 1), g("b", 8, weight=0)], 4,
     {"a": 1, "b": 3}),
    ("presubscribed is offered first", [g("a", 2, presubscribed=1, active=2), g("b", 4)], 4,
     {"a": 2, "b": 2}),
    ("F6 deadlock: newest starving job disabled",
     [g("a", 2, smallest_pending=2), g("b", 2, registered_at=1, smallest_pending=2)], 2,
     {"a": 2, "b": 0}),
    ("F8 deadlock: only the starving job is disabled",
     [g("g1", 3, smallest_pending=3), g("g2", 2, active=1, registered_at=1, smallest_pending=1),
      g("g3", 4, registered_at=2, smallest_pending=4), g("g4", 1, registered_at=3,
      smallest_pending=1)], 7,
     {"g1": 3, "g2": 2, "g3": 0, "g4": 1}),
    ("no pending request: never disabled", [g("a", 3), g("b", 3, registered_at=1)], 2,
     {"a": 1, "b": 1}),
    ("nothing to offer", [g("a", 0)], 0, {"a": 0}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("groups", "capacity", "expected"),
    [row[1:] for row in OFFER_ROWS],
    ids=[row[0] for row in OFFER_ROWS],
)
def test_compute_offers(groups: list[GroupState], capacity: int, expected: dict[str, int]) -> None:
    assert compute_offers(groups, capacity) == expected


@st.composite
def group_states(draw: st.DrawFn) -> tuple[list[GroupState], int]:
    count = draw(st.integers(1, 5))
    groups = []
    for index in range(count):
        demand = draw(st.integers(0, 12))
        presubscribed = draw(st.integers(0, demand))
        groups.append(
            GroupState(
                f"j{index}",
                demand,
                weight=draw(st.sampled_from([0.0, 0.5, 1.0, 3.0])),
                active=presubscribed,
                presubscribed=presubscribed,
                registered_at=draw(st.integers(0, 3)),
                smallest_pending=draw(st.none() | st.integers(1, 12)),
            )
        )
    presubscribed_total = sum(gr.presubscribed for gr in groups)
    return groups, presubscribed_total + draw(st.integers(0, 20))


@given(group_states())
def test_offers_never_exceed_capacity_or_demand(case: tuple[list[GroupState], int]) -> None:
    groups, capacity = case
    offers = compute_offers(groups, capacity)
    assert sum(offers.values()) <= capacity
    assert all(offers[gr.job_id] <= gr.demand for gr in groups)
    if sum(gr.demand for gr in groups) <= capacity:
        assert offers == {gr.job_id: gr.demand for gr in groups}
    assert compute_offers(list(reversed(groups)), capacity) == offers


def reference_offers(groups: list[GroupState], capacity: int) -> dict[str, int]:
    """compute_offers written the plain way (every round and total rescans every job)."""
    order = sorted(groups, key=lambda g: (g.demand, g.registered_at, g.job_id))
    offered = {g.job_id: g.presubscribed for g in order}
    disabled: set[str] = set()
    left = capacity - sum(g.presubscribed for g in groups)

    def wanting(g: GroupState) -> bool:
        return g.job_id not in disabled and offered[g.job_id] < g.demand

    def total() -> float:
        return sum(g.weight for g in order if wanting(g))

    while True:
        start, weight, progressed = left, total(), False
        for g in order:
            if left <= 0:
                break
            if not wanting(g):
                continue
            share = 1 if weight == 0 else math.floor(start * g.weight / weight)
            want = g.demand - offered[g.job_id]
            offer = min(max(1, share), left, want)
            offered[g.job_id] += offer
            left -= offer
            progressed = True
            if offer == want:
                weight = total()
        if left <= 0:
            newest = sorted(order, key=lambda g: (g.registered_at, g.job_id), reverse=True)
            victim = next(
                (
                    g
                    for g in newest
                    if wanting(g)
                    and g.smallest_pending is not None
                    and g.smallest_pending > offered[g.job_id]
                ),
                None,
            )
            if victim is not None:
                disabled.add(victim.job_id)
                left += offered[victim.job_id]
                offered[victim.job_id] = 0
                continue
        if not progressed:
            return offered


WEIGHTS = st.sampled_from([0.0, 0.5, 1.0, 3.0, 0.1, 1 / 3, 2.5e-8, 7e15, 1e300])


def test_offers_sum_weights_as_floats_in_job_order() -> None:
    # 2**53 + 1 + 1 is 2**53 in floats: the big job's share is all 10 slots, not 9 and 1.
    groups = [GroupState(f"j{i}", 100, w, registered_at=i) for i, w in enumerate([2.0**53, 1, 1])]
    assert (
        compute_offers(groups, 10) == reference_offers(groups, 10) == {"j0": 10, "j1": 0, "j2": 0}
    )


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 30),
            WEIGHTS,
            st.integers(0, 6),
            st.integers(0, 4),
            st.none() | st.integers(1, 16),
        ),
        min_size=1,
        max_size=25,
    ),
    st.integers(0, 120),
)
def test_offers_match_the_plain_progressive_filling(
    rows: list[tuple[int, float, int, int, int | None]], extra: int
) -> None:
    groups = [
        GroupState(f"j{i}", demand, weight, min(pre, demand), min(pre, demand), at, smallest)
        for i, (demand, weight, pre, at, smallest) in enumerate(rows)
    ]
    capacity = sum(g.presubscribed for g in groups) + extra
    assert compute_offers(groups, capacity) == reference_offers(groups, capacity)


@st.composite
def snapshots(draw: st.DrawFn) -> PoolSnapshot:
    sizes = draw(st.lists(st.integers(1, 8), min_size=1, max_size=4))
    agents: tuple[AgentState, ...] = tuple(
        AgentState(f"a{i}", size, max_zero_slot=draw(st.integers(0, 2)))
        for i, size in enumerate(sizes)
    )
    ids = [a.id for a in agents]
    pending: list[Request] = []
    running: list[RunningAllocation] = []
    for index in range(draw(st.integers(0, 10))):
        request = Request(
            f"t{index}",
            draw(st.sampled_from(["j0", "j1", "j2", "j3"])),
            draw(st.integers(0, 10)),
            preemptible=draw(st.booleans()),
            job_submitted_at=draw(st.integers(0, 3)),
            requested_at=index,
            blocked_agents=frozenset(draw(st.lists(st.sampled_from(ids), max_size=2))),
        )
        fit = find_fit(request, agents) if draw(st.booleans()) else None
        if fit is None:
            pending.append(request)
            continue
        agents = reserve(agents, fit, request)
        running.append(RunningAllocation(request, fit))
    groups = {
        job: JobSettings(
            job,
            weight=draw(st.sampled_from([0.0, 1.0, 2.0, 5.0])),
            max_slots=draw(st.none() | st.integers(0, 10)),
        )
        for job in ("j0", "j1", "j2", "j3")
    }
    return PoolSnapshot(agents, tuple(pending), tuple(running), groups)


@settings(max_examples=300)
@given(snapshots(), st.booleans())
def test_plan_properties(snapshot: PoolSnapshot, heterogeneous: bool) -> None:
    scheduler = FairShareScheduler(allow_heterogeneous=heterogeneous)
    plan = scheduler.schedule(snapshot)
    assert plan.is_total_for(snapshot.pending)
    assert all(w.detail for w in plan.waiting)
    running = {r.allocation_id: r for r in snapshot.running}
    preempted = {p.allocation_id for p in plan.preempt}
    assert all(running[a].request.preemptible for a in preempted)
    job_of = {r.allocation_id: r for r in snapshot.pending}
    # Zero-slot work is outside fair share (Determined starts it before any offer).
    started_jobs = {
        job_of[s.allocation_id].job_id for s in plan.start if job_of[s.allocation_id].slots
    }
    assert not started_jobs & {running[a].job_id for a in preempted}
    agents = snapshot.agents
    for allocation_id in sorted(preempted):
        agents = release(agents, running[allocation_id].placements)
    for start in plan.start:
        agents = reserve(agents, start.placements, job_of[start.allocation_id])
    shuffled = replace(snapshot, pending=snapshot.pending[::-1], running=snapshot.running[::-1])
    assert scheduler.schedule(shuffled) == plan
    assert scheduler.schedule(snapshot) == plan
