"""AgentPool gives exactly what the fitting functions give on its agents, after any changes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resource_pools.agent_pool import AgentPool, _by_distance
from resource_pools.fitting import (
    OverCommitError,
    explain_no_fit,
    find_fit,
    hash_distance,
    release,
    reserve,
)
from resource_pools.types import AgentState, FittingPolicy, Placement, Request

POLICIES = st.sampled_from(list(FittingPolicy))


@st.composite
def agent_lists(draw: st.DrawFn) -> tuple[AgentState, ...]:
    count = draw(st.integers(0, 9))
    agents = []
    for i in range(count):
        slots = draw(st.sampled_from([0, 1, 2, 4, 4, 8]))
        agents.append(
            AgentState(
                f"agent-{i}",
                slots,
                used_slots=draw(st.integers(0, slots)),
                max_zero_slot=draw(st.integers(0, 3)),
                zero_slot_running=draw(st.integers(0, 2)),
                enabled=draw(st.booleans() | st.just(True)),
                draining=draw(st.just(False) | st.booleans()),
            )
        )
    return tuple(agents)


@st.composite
def requests(draw: st.DrawFn, agent_ids: tuple[str, ...]) -> Request:
    blocked = draw(st.frozensets(st.sampled_from(agent_ids), max_size=2)) if agent_ids else ()
    return Request(
        f"alloc-{draw(st.integers(0, 10_000))}",
        "job",
        draw(st.sampled_from([0, 1, 2, 3, 4, 6, 8, 12, 16])),
        blocked_agents=frozenset(blocked),
        single_node=draw(st.booleans()),
    )


def same_everywhere(pool: AgentPool, agents: tuple[AgentState, ...], request: Request) -> None:
    policy, het = pool.policy, pool.allow_heterogeneous
    expected = find_fit(request, agents, policy, allow_heterogeneous=het)
    assert pool.agents() == agents
    assert pool.find_fit(request) == expected
    assert pool.fits(request) == (expected is not None)
    if expected is None:
        assert pool.explain_no_fit(request) == explain_no_fit(
            request, agents, allow_heterogeneous=het
        )


@settings(max_examples=300, deadline=None)
@given(st.data(), agent_lists(), POLICIES, st.booleans())
def test_matches_fitting_through_reserves_and_releases(
    data: st.DataObject, agents: tuple[AgentState, ...], policy: FittingPolicy, het: bool
) -> None:
    pool = AgentPool(agents, policy, allow_heterogeneous=het)
    ids = tuple(a.id for a in agents)
    held: list[tuple[Placement, ...]] = []
    for _ in range(data.draw(st.integers(1, 12))):
        request = data.draw(requests(ids))
        same_everywhere(pool, agents, request)
        fit = find_fit(request, agents, policy, allow_heterogeneous=het)
        if fit is not None and data.draw(st.booleans()):
            agents = reserve(agents, fit, request)
            pool.reserve(fit, request)
            held.append(fit)
        elif held and data.draw(st.booleans()):
            placements = held.pop(data.draw(st.integers(0, len(held) - 1)))
            agents = release(agents, placements)
            pool.release(placements)
        assert pool.agents() == agents


@settings(max_examples=150, deadline=None)
@given(st.data(), agent_lists())
def test_rollback_restores_everything(data: st.DataObject, agents: tuple[AgentState, ...]) -> None:
    pool = AgentPool(agents)
    ids = tuple(a.id for a in agents)
    probes = [data.draw(requests(ids)) for _ in range(4)]
    before = [pool.find_fit(r) for r in probes]
    pool.begin()
    for request in probes:
        fit = pool.find_fit(request)
        if fit is not None:
            pool.reserve(fit, request)
    for agent in agents:
        if agent.used_slots:
            pool.release([Placement(agent.id, agent.used_slots)])
    pool.rollback()
    assert pool.agents() == agents
    assert [pool.find_fit(r) for r in probes] == before


def test_restore_is_the_inverse_of_release_even_on_a_draining_agent() -> None:
    agents = (AgentState("a", 4, used_slots=3, zero_slot_running=1, draining=True),)
    pool = AgentPool(agents)
    placements = (Placement("a", 3),)
    pool.release(placements)
    pool.release([Placement("a", 0)])
    pool.restore([Placement("a", 0)])
    pool.restore(placements)
    assert pool.agents() == agents


@pytest.mark.parametrize(
    ("placements", "message"),
    [
        ((Placement("x", 1),), "unknown agent x"),
        ((Placement("a", 1), Placement("a", 1)), "placed twice"),
        ((Placement("a", 5),), "5 slots requested, 4 free"),
    ],
)
def test_reserve_errors_change_nothing(placements: tuple[Placement, ...], message: str) -> None:
    pool = AgentPool((AgentState("a", 4),))
    slots = sum(p.slots for p in placements)
    with pytest.raises(OverCommitError, match=message):
        pool.reserve(placements, Request("r", "j", slots))
    assert pool.agents() == (AgentState("a", 4),)


def test_release_skips_unknown_agents_and_refuses_over_release() -> None:
    pool = AgentPool((AgentState("a", 4, used_slots=1),))
    pool.release([Placement("gone", 2)])
    with pytest.raises(OverCommitError, match="2 slots released, 1 used"):
        pool.release([Placement("a", 2)])
    assert pool.agents() == (AgentState("a", 4, used_slots=1),)


@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=8, unique=True),
    st.integers(0, 2**64 - 1),
)
def test_by_distance_is_hash_distance_order(hashes: list[int], x: int) -> None:
    bucket = sorted((h, f"id{i}") for i, h in enumerate(hashes))
    order = [h for h, _ in _by_distance(bucket, x)]
    assert order == sorted(hashes, key=lambda h: (x - h) % 2**64)


def test_by_distance_breaks_equal_hashes_by_id() -> None:
    bucket = sorted([(5, "b"), (5, "a"), (9, "c"), (1, "d")])
    assert [i for _, i in _by_distance(bucket, 6)] == ["a", "b", "d", "c"]
    assert [i for _, i in _by_distance(bucket, 0)] == ["c", "a", "b", "d"]


def test_nearest_agent_matches_hash_distance() -> None:
    agents = tuple(AgentState(f"a{i}", 4) for i in range(50))
    pool = AgentPool(agents)
    for n in range(20):
        request = Request(f"r{n}", "j", 1)
        (placement,) = pool.find_fit(request) or ()
        best = min(agents, key=lambda a: (hash_distance(request.allocation_id, a.id), a.id))
        assert placement.agent_id == best.id
