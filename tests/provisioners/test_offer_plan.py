"""The pure launch planner over offers: ranking, cold offers, gangs, budget, spot fallback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioners.base import LaunchFailureKind, OfferError, OfferLaunchResult
from provisioners.offer_plan import OfferDemand, OfferSnapshot, plan_offers
from provisioners.offers import (
    ColdOffer,
    Offer,
    OfferSettings,
    OfferState,
    backoff_for,
    offer_state_from_json,
    offer_state_to_json,
    record_capacity_error,
    record_offer_success,
)
from provisioners.tick import ProvisioningSettings, TickState, record_offer_attempt

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)


def offer(kind: str, where: str, slots: int, price: float, *, spot: bool = False, rank: int = 0,
          fallback: bool = False) -> Offer:  # fmt: skip
    return Offer(kind, where, slots, spot, price, rank, fallback)


A1 = offer("g5.xlarge", "subnet-a", 1, 1.0, rank=0)
B1 = offer("g5.xlarge", "subnet-b", 1, 1.0, rank=1)
A4 = offer("g5.12xlarge", "subnet-a", 4, 5.6, rank=2)
A8 = offer("p4d.24xlarge", "subnet-a", 8, 32.0, rank=3)


def plan(offers, instances, unit=1, *, largest=0, room=None, state=None, budget=None, running=0.0,
         now=T0, on_demand_after=None):  # fmt: skip
    return plan_offers(
        OfferSnapshot(
            now=now,
            offers=tuple(offers),
            demand=OfferDemand(instances, unit, largest, room),
            state=state or OfferState(),
            settings=OfferSettings(max_hourly_cost=budget, on_demand_after=on_demand_after),
            running_cost=running,
        )
    )


def picks(p) -> list[tuple[str, int]]:
    return [(c.offer.key, c.count) for c in p.choices]


# -- tables ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offers", "instances", "largest", "expected"),
    [
        # equal prices: config order
        ([A1, B1], 2, 1, [(A1.key, 2), (B1.key, 2)]),
        # one 4-slot instance ($5.6) is dearer than four 1-slot ones ($4): the small ones win
        ([A4, A1], 4, 1, [(A1.key, 4), (A4.key, 1)]),
        # a 4-slot request (a gang of 4 x 1-slot instances) fits both: cheapest first
        ([A4, A1], 4, 4, [(A1.key, 4), (A4.key, 1)]),
        # a 6-slot request fits one 8-slot instance or six 1-slot ones, not 4-slot instances
        ([A8, A4, A1], 6, 6, [(A1.key, 6), (A8.key, 1)]),
        # nothing wanted: nothing planned
        ([A1, B1], 0, 0, []),
    ],
)
def test_ranking(offers, instances, largest, expected) -> None:
    assert picks(plan(offers, instances, largest=largest)) == expected


def test_a_cold_offer_is_left_out_with_its_reason_and_the_next_comes_first() -> None:
    state = record_capacity_error(OfferState(), OfferSettings(), A1.key, T0, "ICE in us-east-1a")
    p = plan([A1, B1], 2, state=state, now=T0 + timedelta(seconds=30))
    assert picks(p) == [(B1.key, 2)]
    assert p.left_out[0][0] == A1.key and "ICE in us-east-1a" in p.left_out[0][1]
    assert p.waiting is None  # B1 covers the demand


def test_when_every_offer_is_cold_work_waits_with_the_reasons() -> None:
    state = OfferState()
    for o in (A1, B1):
        state = record_capacity_error(state, OfferSettings(), o.key, T0, f"no {o.location}")
    p = plan([A1, B1], 1, state=state)
    assert p.choices == ()
    assert p.waiting is not None and "no subnet-a" in p.waiting and "no subnet-b" in p.waiting


def test_the_backoff_doubles_up_to_its_cap() -> None:
    s = OfferSettings(backoff=MIN, backoff_max=5 * MIN)
    assert [backoff_for(n, s) for n in range(1, 6)] == [MIN, 2 * MIN, 4 * MIN, 5 * MIN, 5 * MIN]
    state = OfferState()
    for n in range(3):
        state = record_capacity_error(state, s, A1.key, T0 + n * MIN, "ICE")
    assert state.cold[A1.key] == ColdOffer(3, T0 + 2 * MIN, T0 + 6 * MIN, "ICE")
    assert record_offer_success(state, A1.key).cold == {}


def test_the_budget_caps_the_count_and_says_why() -> None:
    p = plan([A1], 5, budget=3.0, running=1.0)
    assert picks(p) == [(A1.key, 2)]
    assert p.waiting is not None and "max_hourly_cost $3/h" in p.waiting
    p = plan([A1], 5, budget=3.0, running=2.5)
    assert p.choices == () and "over max_hourly_cost" in (p.waiting or "")


def test_a_gang_is_launched_whole_or_not_at_all() -> None:
    # 4 slots on 1-slot instances: 4 instances, but the budget allows 3
    p = plan([A1], 4, largest=4, budget=3.0)
    assert p.choices == ()
    # ...and max_instances leaves room for 2
    p = plan([A1], 4, largest=4, room=2)
    assert p.choices == () and "gang of 4" in (p.waiting or "")


def test_on_demand_fallback_opens_after_the_configured_wait() -> None:
    spot = offer("g5.xlarge", "subnet-a", 1, 0.4, spot=True, rank=0)
    od = offer("g5.xlarge", "subnet-a", 1, 1.0, rank=1, fallback=True)
    long = OfferSettings(backoff=60 * MIN, backoff_max=60 * MIN)
    state = record_capacity_error(OfferState(), long, spot.key, T0, "no spot")
    first = plan([spot, od], 1, state=state, on_demand_after=10 * MIN)
    assert first.choices == () and "on-demand only after" in (first.waiting or "")
    assert first.state.unmet_since == T0
    later = plan([spot, od], 1, state=first.state, now=T0 + 10 * MIN, on_demand_after=10 * MIN)
    assert picks(later) == [(od.key, 1)]
    never = plan([spot, od], 1, state=state, now=T0 + 30 * MIN)
    assert never.choices == () and "fallback is off" in (never.waiting or "")
    assert plan([spot, od], 0, state=first.state).state.unmet_since is None


def test_a_fleet_answer_marks_refused_offers_cold_and_clears_the_one_that_gave() -> None:
    settings_ = ProvisioningSettings(offers=(A1, B1))
    state = TickState()
    state = TickState(offers=record_capacity_error(state.offers, OfferSettings(), B1.key, T0, "x"))
    result = OfferLaunchResult(
        {B1.key: ["i-1"]},
        (OfferError(A1.key, LaunchFailureKind.CAPACITY, "InsufficientInstanceCapacity: none"),
         OfferError("t@z/spot", LaunchFailureKind.CONFIG, "InvalidParameter")),
    )  # fmt: skip
    after, decisions = record_offer_attempt(state, settings_, T0, result)
    assert set(after.offers.cold) == {A1.key}
    assert [d.kind.value for d in decisions] == ["offer_cold"]
    assert "InsufficientInstanceCapacity" in decisions[0].reason


def test_offer_state_round_trips_through_json() -> None:
    state = record_capacity_error(OfferState(unmet_since=T0), OfferSettings(), A1.key, T0, "ICE")
    assert offer_state_from_json(offer_state_to_json(state)) == state
    assert TickState.from_json(TickState(offers=state).to_json()).offers == state
    assert TickState.from_json({}).offers == OfferState()


# -- properties --------------------------------------------------------------------------------

locations = st.sampled_from(["a", "b", "c"])
offer_lists = st.lists(
    st.builds(
        lambda kind, where, slots, price, spot: Offer(kind, where, slots, spot, price),
        st.sampled_from(["t1", "t2", "t4", "t8"]),
        locations,
        st.sampled_from([1, 2, 4, 8]),
        st.floats(min_value=0.1, max_value=40, allow_nan=False),
        st.booleans(),
    ),
    min_size=1,
    max_size=6,
    unique_by=lambda o: o.key,
).map(lambda offers: [Offer(**{**o.__dict__, "rank": i}) for i, o in enumerate(offers)])
demands = st.tuples(
    st.integers(min_value=0, max_value=20),  # unit instances
    st.sampled_from([1, 2, 4, 8]),  # unit slots
    st.integers(min_value=0, max_value=32),  # largest request
    st.one_of(st.none(), st.integers(min_value=0, max_value=20)),  # room
)


@settings(max_examples=300, deadline=None)
@given(offer_lists, demands, st.floats(min_value=0, max_value=100), st.floats(0, 50))
def test_never_plans_past_the_budget(offers, demand, budget, running) -> None:
    instances, unit, largest, room = demand
    p = plan(offers, instances, unit, largest=largest, room=room, budget=budget, running=running)
    for choice in p.choices:
        assert running + choice.hourly_cost <= budget + 1e-6


@settings(max_examples=300, deadline=None)
@given(offer_lists, demands)
def test_a_gang_never_spans_locations_and_always_gets_all_its_instances(offers, demand) -> None:
    instances, unit, largest, room = demand
    p = plan(offers, instances, unit, largest=largest, room=room)
    for choice in p.choices:
        # one choice is one offer, so one location; a gang's instances all come with it
        if largest > choice.offer.slots:
            assert largest % choice.offer.slots == 0
            wanted = -(-instances * unit // choice.offer.slots)
            assert choice.count >= min(largest // choice.offer.slots, wanted)
        if room is not None:
            assert choice.count <= room


@settings(max_examples=300, deadline=None)
@given(offer_lists, demands, st.integers(min_value=1, max_value=6))
def test_a_cold_offer_is_retried_after_its_backoff(offers, demand, failures) -> None:
    instances, unit, largest, _ = demand
    s = OfferSettings()
    target = offers[0]
    state = OfferState()
    for _ in range(failures):
        state = record_capacity_error(state, s, target.key, T0, "ICE")
    until = state.cold[target.key].cold_until
    assert until == T0 + backoff_for(failures, s)
    during = plan(
        offers, instances, unit, largest=largest, state=state, now=until - timedelta(seconds=1)
    )
    assert target.key not in [c.offer.key for c in during.choices]
    after = plan(offers, instances, unit, largest=largest, state=state, now=until)
    fresh = plan(offers, instances, unit, largest=largest, now=until)
    assert picks(after) == picks(fresh)


@settings(max_examples=300, deadline=None)
@given(offer_lists, st.integers(min_value=1, max_value=20), st.sampled_from([1, 2, 4, 8]))
def test_the_cheapest_offer_that_covers_the_demand_wins_when_nothing_is_cold(
    offers, instances, unit
) -> None:
    p = plan(offers, instances, unit, largest=unit)
    if not p.choices:
        return
    wanted = instances * unit
    full = [c for c in p.choices if c.covers_slots >= wanted]
    if full:
        assert p.choices[0].hourly_cost == min(c.hourly_cost for c in full)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=30),
    st.sampled_from([0, 1, 2, 4, 8]),
    st.booleans(),
    st.integers(min_value=0, max_value=64),
    st.integers(min_value=0, max_value=30),
)
def test_one_offer_plans_exactly_what_the_decider_asked(
    instances, slots, spot, largest, room
) -> None:
    """Determined's one-type-one-subnet config: the plan is that offer x the decider's count
    (the decider already stayed under max_instances; only requests the unit holds are seen)."""
    only = Offer("g4dn.metal", "", slots, spot, 7.824)
    countable = largest if slots and (largest <= slots or largest % slots == 0) else 0
    p = plan([only], instances, slots, largest=countable, room=max(room, instances))
    assert picks(p) == ([(only.key, instances)] if instances else [])
