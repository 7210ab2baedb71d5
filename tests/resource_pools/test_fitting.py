"""Fitting (reference §1.2 and the fitting_test tables of §1.5), plus the types it relies on."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resource_pools.fitting import (
    OverCommitError,
    can_dedicate,
    can_share,
    explain_no_fit,
    find_fit,
    hash_distance,
    release,
    reserve,
    score,
    sort_candidates,
)
from resource_pools.types import (
    AgentState,
    FittingPolicy,
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

BEST = FittingPolicy.BEST
WORST = FittingPolicy.WORST


def agent(
    agent_id: str, slots: int, used: int = 0, max_zero: int = 100, zero_running: int = 0
) -> AgentState:
    return AgentState(agent_id, slots, used, max_zero, zero_running)


def task(slots: int, *, blocked: frozenset[str] = frozenset(), single: bool = False) -> Request:
    return Request("task1", "job1", slots, blocked_agents=blocked, single_node=single)


def fitted_agents(fit: tuple[Placement, ...] | None) -> list[str] | None:
    return None if fit is None else [p.agent_id for p in fit]


def sized_agents(sizes: list[int]) -> list[AgentState]:
    return [agent(f"agent{i}", size) for i, size in enumerate(sizes)]


# --- fitting_test.go single-agent rows: (agents in listing order, request, policy, expected) ---

A_IDLE = [agent("a1", 4, 0, 100, 0), agent("a2", 4, 0, 100, 0)]
A_ZERO_IN_USE = [agent("a1", 4, 0, 100, 2), agent("a2", 4, 0, 100, 2)]
SINGLE_AGENT_ROWS = [
    pytest.param(A_IDLE, task(0), BEST, "a1", id="0-slot idle agents"),
    pytest.param(A_IDLE[::-1], task(0), BEST, "a1", id="0-slot idle agents, other order"),
    pytest.param(A_ZERO_IN_USE, task(0), BEST, "a1", id="0-slot in-use agents"),
    pytest.param(A_ZERO_IN_USE[::-1], task(0), BEST, "a1", id="0-slot in-use agents, reversed"),
    pytest.param(
        [agent("a1", 4, 0, 2, 0), agent("a2", 4, 0, 4, 2)],
        task(0),
        BEST,
        "a1",
        id="0-slot different max zero",
    ),
    pytest.param(
        [agent("a1", 4, 0, 100, 1), agent("a2", 4, 0, 100, 0)],
        task(0),
        BEST,
        "a1",
        id="0-slot single fit",
    ),
    pytest.param([agent("a1", 2), agent("a2", 4)], task(2), BEST, "a1", id="2-slot best fit"),
    pytest.param([agent("a1", 1), agent("a2", 4)], task(1), BEST, "a1", id="1-slot best, 1 first"),
    pytest.param([agent("a2", 4), agent("a1", 1)], task(1), BEST, "a1", id="1-slot best, 4 first"),
    pytest.param([agent("a1", 4), agent("a2", 1)], task(1), BEST, "a2", id="1-slot best, ids swap"),
    pytest.param([agent("a2", 1), agent("a1", 4)], task(1), BEST, "a2", id="1-slot best, swap rev"),
    pytest.param(
        [agent("a1", 2, 1), agent("a2", 4, 1)], task(1), WORST, "a2", id="1-slot worst in use"
    ),
    pytest.param(
        [agent("a1", 2, 1), agent("a2", 5, 3)], task(1), WORST, "a1", id="1-slot worst odd sizes"
    ),
    pytest.param(
        [agent("a1", 2, 0), agent("a2", 5, 3)], task(2), WORST, "a1", id="2-slot worst odd sizes"
    ),
    pytest.param([agent("a1", 8), agent("a2", 4)], task(4), WORST, "a1", id="4-slot worst exact"),
    pytest.param(
        [agent("a1", 8), agent("a2", 4)],
        task(4, single=True),
        WORST,
        "a1",
        id="4-slot worst exact, single agent",
    ),
    pytest.param([agent("a1", 1), agent("a2", 3)], task(2), BEST, "a2", id="2-slot no flag, best"),
    pytest.param(
        [agent("a1", 1), agent("a2", 3)], task(2), WORST, "a2", id="2-slot no flag, worst"
    ),
]


@pytest.mark.parametrize(("agents", "request_", "policy", "expected"), SINGLE_AGENT_ROWS)
def test_single_agent_rows(
    agents: list[AgentState], request_: Request, policy: FittingPolicy, expected: str
) -> None:
    assert find_fit(request_, agents, policy) == (Placement(expected, request_.slots),)


# --- fitting_test.go dedicated (multi-agent) rows: (sizes, slots, heterogeneous, sizes used) ---

DEDICATED_ROWS = [
    pytest.param([1, 5, 10], 10, False, [10], id="simple"),
    pytest.param([8, 7, 7, 4, 4, 4, 4], 16, False, [4, 4, 4, 4], id="compound"),
    pytest.param([3, 3, 3, 3, 3], 16, False, None, id="unsatisfiable"),
    pytest.param([8, 8, 3, 3, 3], 12, False, None, id="needs to be a multiple"),
    pytest.param([4, 4, 4, 4, 4], 8, False, [4, 4], id="not all agents"),
    pytest.param([2, 1, 1], 4, True, [2, 1, 1], id="heterogeneous exact"),
    pytest.param([2, 1, 1], 4, False, None, id="heterogeneous exact, heterogeneous off"),
    pytest.param([2, 1, 1, 1, 1], 4, True, [1, 1, 1, 1], id="heterogeneous prefers homogeneous"),
    pytest.param([2, 1, 1, 1], 4, True, [2, 1, 1], id="heterogeneous extra slots unused"),
    pytest.param([2, 1, 1], 8, True, None, id="heterogeneous not enough"),
    pytest.param(
        [32, 32, 16, 16, 8, 8, 4, 4, 2, 2, 1, 1],
        63,
        True,
        [32, 16, 8, 4, 2, 1],
        id="heterogeneous large",
    ),
]


@pytest.mark.parametrize(("sizes", "slots", "heterogeneous", "expected"), DEDICATED_ROWS)
def test_dedicated_rows(
    sizes: list[int], slots: int, heterogeneous: bool, expected: list[int] | None
) -> None:
    agents = sized_agents(sizes)
    fit = find_fit(task(slots), agents, BEST, allow_heterogeneous=heterogeneous)
    if expected is None:
        assert fit is None
        return
    assert fit is not None
    size_of = {a.id: a.slots for a in agents}
    assert [size_of[p.agent_id] for p in fit] == expected
    assert all(p.slots == size_of[p.agent_id] for p in fit)
    assert len({p.agent_id for p in fit}) == len(fit)


def test_compound_uses_exactly_the_four_small_agents() -> None:
    fit = find_fit(task(16), sized_agents([8, 7, 7, 4, 4, 4, 4]), BEST)
    assert sorted(fitted_agents(fit) or []) == ["agent3", "agent4", "agent5", "agent6"]


def test_single_node_never_spans_agents() -> None:
    assert find_fit(task(2, single=True), [agent("a1", 1), agent("a2", 1)], BEST) is None
    assert fitted_agents(find_fit(task(2), [agent("a1", 1), agent("a2", 1)], BEST)) is not None


def test_one_slot_request_never_spans_agents() -> None:
    assert find_fit(task(1), [agent("a1", 1, used=1), agent("a2", 0)], BEST) is None


def test_dedicated_fit_skips_agents_with_used_slots_but_allows_zero_slot_containers() -> None:
    agents = [agent("a1", 2, used=1), agent("a2", 2, zero_running=3), agent("a3", 2)]
    assert sorted(fitted_agents(find_fit(task(4), agents, BEST)) or []) == ["a2", "a3"]


@pytest.mark.parametrize(
    ("blocked", "expected"),
    [
        pytest.param({"a1", "a2"}, None, id="both blocked"),
        pytest.param({"a1"}, "a2", id="a1 blocked"),
        pytest.param({"a2"}, "a1", id="a2 blocked"),
    ],
)
@pytest.mark.parametrize("policy", [BEST, WORST])
def test_blocked_nodes_rows(blocked: set[str], expected: str | None, policy: FittingPolicy) -> None:
    fit = find_fit(task(1, blocked=frozenset(blocked)), [agent("a1", 4), agent("a2", 4)], policy)
    assert fit == (None if expected is None else (Placement(expected, 1),))


def test_blocked_agents_are_skipped_by_dedicated_fits() -> None:
    agents = sized_agents([2, 2, 2])
    fit = find_fit(task(4, blocked=frozenset({"agent0", "agent1"})), agents, BEST)
    assert fit is None


def test_zero_slot_request_needs_an_aux_place() -> None:
    assert find_fit(task(0), [agent("a1", 4, max_zero=0)], BEST) is None
    assert find_fit(task(0), [agent("a1", 4, max_zero=1, zero_running=1)], BEST) is None
    assert find_fit(task(0), [agent("a1", 0, max_zero=1)], BEST) == (Placement("a1", 0),)


# --- score spot checks ---


@pytest.mark.parametrize(
    ("policy", "slots", "state", "expected"),
    [
        pytest.param(BEST, 0, agent("a", 0, 0, 2, 0), 1 / 3, id="best zero-slot empty aux"),
        pytest.param(BEST, 0, agent("a", 0, 0, 2, 1), 0.5, id="best zero-slot one aux running"),
        pytest.param(BEST, 1, agent("a", 1, 1), 1.0, id="best 1-slot on full 1-slot agent"),
        pytest.param(BEST, 1, agent("a", 9), 0.1, id="best 1-slot on 9 free"),
        pytest.param(BEST, 1, agent("a", 10, 1), 0.1, id="best 1-slot on 10 with 1 used"),
        pytest.param(WORST, 0, agent("a", 0, 0, 2, 0), 1.0, id="worst zero-slot empty aux"),
        pytest.param(WORST, 0, agent("a", 0, 0, 2, 1), 0.5, id="worst zero-slot one aux running"),
        pytest.param(WORST, 1, agent("a", 1, 1), 0.0, id="worst 1-slot on full 1-slot agent"),
        pytest.param(WORST, 1, agent("a", 10, 5), 0.5, id="worst 1-slot on 10 with 5 used"),
    ],
)
def test_score_spot_checks(
    policy: FittingPolicy, slots: int, state: AgentState, expected: float
) -> None:
    assert score(task(slots), state, policy) == pytest.approx(expected)


@pytest.mark.parametrize("policy", [BEST, WORST])
def test_zero_slot_score_is_zero_without_aux_capacity(policy: FittingPolicy) -> None:
    assert score(task(0), agent("a", 4, max_zero=0), policy) == 0.0


def test_zero_slot_on_agent_with_used_slots_scores_by_slots() -> None:
    assert score(task(0), agent("a", 4, used=1, max_zero=10), BEST) == pytest.approx(1 / 4)
    assert score(task(0), agent("a", 4, used=1, max_zero=10), WORST) == pytest.approx(3 / 4)


def test_worst_fit_on_an_agent_without_slots_scores_zero() -> None:
    assert score(task(1), agent("a", 0), WORST) == 0.0


# --- hash distance and candidate order ---


def test_hash_distance_pinned_value() -> None:
    assert hash_distance("task1", "task1") == 0
    assert hash_distance("task1", "a1") < hash_distance("task1", "a2")
    assert hash_distance("task1", "a1") == 10566453769740472898


def test_hash_distance_wraps_as_unsigned_64_bit() -> None:
    forward, backward = hash_distance("x", "y"), hash_distance("y", "x")
    assert 0 <= forward < 2**64 and 0 <= backward < 2**64
    assert forward + backward == 2**64


def test_sort_candidates_orders_by_score_then_hash() -> None:
    agents = [agent("a2", 4), agent("a1", 4)]
    assert [a.id for a in sort_candidates(task(1), agents, BEST)] == ["a1", "a2"]
    by_score = [agent("a1", 4), agent("a2", 2)]
    assert [a.id for a in sort_candidates(task(1), by_score, BEST)] == ["a2", "a1"]


# --- agent accounting (§1.2 state table) ---


def test_enabled_agent_accounting() -> None:
    state = AgentState("a", slots=8, used_slots=3, max_zero_slot=5, zero_slot_running=2)
    assert (state.total_slots, state.empty_slots) == (8, 5)
    assert (state.zero_slot_capacity, state.empty_zero_slots) == (5, 3)


def test_disabled_agent_accounting() -> None:
    state = AgentState("a", 8, 3, 5, 2, enabled=False)
    assert (state.total_slots, state.empty_slots, state.zero_slot_capacity) == (0, 0, 0)
    assert state.empty_zero_slots == 0


def test_draining_agent_accounting() -> None:
    state = AgentState("a", 8, 3, 5, 2, enabled=False, draining=True)
    assert (state.total_slots, state.empty_slots, state.zero_slot_capacity) == (3, 0, 2)
    assert state.empty_zero_slots == 0
    assert find_fit(task(0), [state], BEST) is None
    assert find_fit(task(1), [state], BEST) is None


def test_idle_needs_no_slotted_and_no_zero_slot_container() -> None:
    assert agent("a", 4).is_idle
    assert not agent("a", 4, used=1).is_idle
    assert not agent("a", 4, zero_running=1).is_idle


def test_negative_counts_are_rejected() -> None:
    with pytest.raises(ValueError):
        AgentState("a", slots=-1)
    with pytest.raises(ValueError):
        Request("r", "j", slots=-1)


# --- reserve / release ---


def test_reserve_and_release_slots() -> None:
    agents = (agent("a1", 4), agent("a2", 4, used=1))
    after = reserve(agents, [Placement("a2", 3)], task(3))
    assert after == (agent("a1", 4), agent("a2", 4, used=4))
    assert agents == (agent("a1", 4), agent("a2", 4, used=1))
    assert release(after, [Placement("a2", 3)]) == agents


def test_reserve_and_release_zero_slot() -> None:
    agents = (agent("a1", 4, max_zero=1),)
    after = reserve(agents, [Placement("a1", 0)], task(0))
    assert after[0].zero_slot_running == 1
    with pytest.raises(OverCommitError):
        reserve(after, [Placement("a1", 0)], task(0))
    assert release(after, [Placement("a1", 0)]) == agents


@pytest.mark.parametrize(
    ("placements", "request_"),
    [
        pytest.param([Placement("a1", 5)], task(5), id="more than free"),
        pytest.param([Placement("nope", 1)], task(1), id="unknown agent"),
        pytest.param([Placement("a1", 1)], task(1, blocked=frozenset({"a1"})), id="blocked"),
        pytest.param([Placement("a1", 1)], task(2), id="sum below request"),
        pytest.param([Placement("a1", 1), Placement("a1", 1)], task(2), id="agent twice"),
    ],
)
def test_reserve_refuses(placements: list[Placement], request_: Request) -> None:
    with pytest.raises(OverCommitError):
        reserve((agent("a1", 4),), placements, request_)


def test_release_skips_vanished_agents_and_refuses_over_release() -> None:
    agents = (agent("a1", 4, used=2),)
    assert release(agents, [Placement("gone", 4)]) == agents
    with pytest.raises(OverCommitError):
        release(agents, [Placement("a1", 3)])
    with pytest.raises(OverCommitError):
        release(agents, [Placement("a1", 0)])


# --- explain_no_fit ---


@pytest.mark.parametrize(
    ("agents", "request_", "reason", "detail"),
    [
        pytest.param([], task(1), WaitReason.NO_AGENTS, "no enabled agents", id="no agents"),
        pytest.param(
            [AgentState("a1", 4, enabled=False)], task(1), WaitReason.NO_AGENTS, "", id="disabled"
        ),
        pytest.param(
            [agent("a1", 4)],
            task(1, blocked=frozenset({"a1"})),
            WaitReason.BLOCKED_NODES,
            "all 1 enabled agents are blocked",
            id="all blocked",
        ),
        pytest.param(
            [agent("a1", 4, max_zero=1, zero_running=1)],
            task(0),
            WaitReason.AUX_CAPACITY,
            "aux-container place",
            id="aux full",
        ),
        pytest.param(
            [agent("a1", 2)],
            task(4),
            WaitReason.EXCEEDS_POOL_CAPACITY,
            "4 slots requested, the pool has 2 in total",
            id="too big for pool",
        ),
        pytest.param(
            [agent("a1", 2), agent("a2", 2)],
            task(4, blocked=frozenset({"a2"})),
            WaitReason.BLOCKED_NODES,
            "not blocked for it have 2",
            id="too big without blocked",
        ),
        pytest.param(
            sized_agents([8, 8, 3, 3, 3]),
            task(12),
            WaitReason.NO_AGENT_FITS_GANG,
            "multiple of slots per agent",
            id="gang shape",
        ),
        pytest.param(
            sized_agents([2, 2]),
            task(4, single=True),
            WaitReason.NO_AGENT_FITS_GANG,
            "on one agent, the largest has 2",
            id="single node too big",
        ),
        pytest.param(
            [agent("a1", 4, used=2), agent("a2", 4, used=3)],
            task(4),
            WaitReason.INSUFFICIENT_SLOTS,
            "4 slots requested, largest free agent has 2",
            id="busy",
        ),
    ],
)
def test_explain_no_fit(
    agents: list[AgentState], request_: Request, reason: WaitReason, detail: str
) -> None:
    waiting = explain_no_fit(request_, agents)
    assert waiting.allocation_id == request_.allocation_id
    assert waiting.reason is reason
    assert detail in waiting.detail


# --- snapshot and plan ---


def test_snapshot_rejects_duplicate_ids() -> None:
    with pytest.raises(ValueError, match="agent id"):
        PoolSnapshot(agents=(agent("a", 1), agent("a", 2)))
    running = RunningAllocation(task(1), (Placement("a", 1),))
    with pytest.raises(ValueError, match="allocation id"):
        PoolSnapshot(agents=(agent("a", 1),), pending=(task(1),), running=(running,))


def test_snapshot_group_defaults_and_queue_position() -> None:
    request = Request("r1", "j1", 1, job_submitted_at=2.5)
    snapshot = PoolSnapshot(agents=(), pending=(request,), groups={"j2": JobSettings("j2")})
    assert snapshot.group("j1") == JobSettings("j1")
    assert snapshot.queue_position(request) == 2_500_000
    positioned = PoolSnapshot(agents=(), groups={"j1": JobSettings("j1", position=1.5)})
    assert positioned.queue_position(request) == 1.5


def test_plan_totality_check() -> None:
    pending = [Request("r1", "j", 1), Request("r2", "j", 1)]
    start = (StartAllocation("r1", (Placement("a", 1),)),)
    waiting = (Waiting("r2", WaitReason.INSUFFICIENT_SLOTS),)
    assert SchedulingPlan(start=start, waiting=waiting).is_total_for(pending)
    assert not SchedulingPlan(start=start).is_total_for(pending)
    assert not SchedulingPlan(start=start, waiting=waiting * 2).is_total_for(pending)
    assert not SchedulingPlan(start=start, waiting=waiting).is_total_for(pending[:1])


# --- properties ---


@st.composite
def agent_states(draw: st.DrawFn, agent_id: str) -> AgentState:
    # Weighted towards enabled, idle agents of common sizes so multi-agent fits occur often.
    slots = draw(st.sampled_from([0, 1, 2, 2, 3, 4, 4, 8]))
    max_zero = draw(st.integers(0, 3))
    return AgentState(
        agent_id,
        slots,
        used_slots=draw(st.one_of(st.just(0), st.integers(0, slots))),
        max_zero_slot=max_zero,
        zero_slot_running=draw(st.integers(0, max_zero)),
        enabled=draw(st.sampled_from([True, True, True, False])),
        draining=draw(st.sampled_from([False, False, False, True])),
    )


@st.composite
def fitting_cases(draw: st.DrawFn) -> tuple[Request, list[AgentState], FittingPolicy, bool]:
    count = draw(st.integers(0, 8))
    ids = [f"agent-{i}" for i in range(count)]
    agents = [draw(agent_states(agent_id)) for agent_id in ids]
    blocked = draw(st.frozensets(st.sampled_from(ids), max_size=2)) if ids else frozenset()
    request = Request(
        allocation_id=draw(st.sampled_from(["task1", "alloc-7", "x", "trial.3.1"])),
        job_id="job",
        slots=draw(st.one_of(st.integers(0, 4), st.sampled_from([6, 8, 12, 16, 24]))),
        blocked_agents=blocked,
        single_node=draw(st.booleans()),
    )
    return request, agents, draw(st.sampled_from(FittingPolicy)), draw(st.booleans())


@st.composite
def gang_cases(draw: st.DrawFn) -> tuple[Request, list[AgentState], FittingPolicy, bool]:
    """Mostly idle agents and requests too big for one agent: exercises multi-agent fits."""
    sizes = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=2, max_size=10))
    agents = [
        AgentState(f"agent-{i}", size, used_slots=min(size, draw(st.sampled_from([0, 0, 0, 1]))))
        for i, size in enumerate(sizes)
    ]
    blocked = draw(st.frozensets(st.sampled_from([a.id for a in agents]), max_size=1))
    request = Request(
        allocation_id=draw(st.sampled_from(["task1", "alloc-7"])),
        job_id="job",
        slots=draw(st.sampled_from([2, 3, 4, 6, 8, 12, 16, 24, 32])),
        blocked_agents=blocked,
    )
    return request, agents, draw(st.sampled_from(FittingPolicy)), draw(st.booleans())


CASES = st.one_of(fitting_cases(), gang_cases())


@given(CASES)
def test_fit_never_over_commits_or_uses_blocked_agents(
    case: tuple[Request, list[AgentState], FittingPolicy, bool],
) -> None:
    request, agents, policy, heterogeneous = case
    fit = find_fit(request, agents, policy, allow_heterogeneous=heterogeneous)
    if fit is None:
        return
    by_id = {a.id: a for a in agents}
    assert sum(p.slots for p in fit) == request.slots
    assert len({p.agent_id for p in fit}) == len(fit)
    for placement in fit:
        state = by_id[placement.agent_id]
        assert placement.agent_id not in request.blocked_agents
        assert placement.slots <= state.empty_slots
        if request.is_zero_slot:
            assert state.empty_zero_slots > 0
    if len(fit) > 1:
        assert request.slots > 1 and not request.single_node
        assert all(by_id[p.agent_id].used_slots == 0 for p in fit)
        assert all(p.slots == by_id[p.agent_id].empty_slots for p in fit)


@given(CASES, st.randoms(use_true_random=False))
def test_fit_is_deterministic_and_independent_of_agent_order(
    case: tuple[Request, list[AgentState], FittingPolicy, bool], rng: random.Random
) -> None:
    request, agents, policy, heterogeneous = case
    first = find_fit(request, agents, policy, allow_heterogeneous=heterogeneous)
    shuffled = list(agents)
    rng.shuffle(shuffled)
    assert find_fit(request, agents, policy, allow_heterogeneous=heterogeneous) == first
    assert find_fit(request, shuffled, policy, allow_heterogeneous=heterogeneous) == first


@given(CASES)
def test_shared_fit_wins_whenever_one_agent_can_hold_the_request(
    case: tuple[Request, list[AgentState], FittingPolicy, bool],
) -> None:
    request, agents, policy, heterogeneous = case
    viable = [a for a in agents if can_share(request, a)]
    fit = find_fit(request, agents, policy, allow_heterogeneous=heterogeneous)
    if viable:
        best = sort_candidates(request, viable, policy)[0]
        assert fit == (Placement(best.id, request.slots),)
    elif fit is not None:
        assert all(can_dedicate(request, a) for a in agents if a.id in {p.agent_id for p in fit})


@given(CASES)
def test_heterogeneous_only_adds_fits(
    case: tuple[Request, list[AgentState], FittingPolicy, bool],
) -> None:
    request, agents, policy, _ = case
    homogeneous = find_fit(request, agents, policy)
    if homogeneous is not None:
        assert find_fit(request, agents, policy, allow_heterogeneous=True) == homogeneous


@given(CASES)
def test_reserving_a_fit_succeeds_and_release_undoes_it(
    case: tuple[Request, list[AgentState], FittingPolicy, bool],
) -> None:
    request, agents, policy, heterogeneous = case
    fit = find_fit(request, agents, policy, allow_heterogeneous=heterogeneous)
    if fit is None:
        waiting = explain_no_fit(request, agents, allow_heterogeneous=heterogeneous)
        assert waiting.allocation_id == request.allocation_id
        assert (waiting.reason is WaitReason.NO_AGENTS) == (
            not any(a.is_schedulable for a in agents)
        )
        return
    reserved = reserve(tuple(agents), fit, request)
    assert all(a.used_slots <= a.slots for a in reserved)
    assert all(a.zero_slot_running <= a.max_zero_slot for a in reserved)
    assert release(reserved, fit) == tuple(agents)


@given(CASES)
def test_scores_are_bounded(case: tuple[Request, list[AgentState], FittingPolicy, bool]) -> None:
    request, agents, policy, _ = case
    for state in agents:
        assert 0.0 <= score(request, state, policy) <= 1.0
