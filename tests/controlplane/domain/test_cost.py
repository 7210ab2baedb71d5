"""What work cost: shares of instances checked against hand-computed tables, and the sums'
invariants under hypothesis (windows add up, a fully used instance is paid exactly once, groups
add up to the total, nothing is negative)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.cost import (
    GROUPINGS,
    AllocationUse,
    InstanceLife,
    Share,
    allocation_share,
    instance_cost,
    lives_by_agent,
    overlap_seconds,
    shares_of,
    sum_shares,
    totals_by,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)
HOUR = 3600.0


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


# Instance A: 4 slots at $4.00/h ($1 per slot-hour), lives 00:00-04:00.
# Instance B: 1 slot at $0.50/h, still running. "static-1" is a static agent: no price.
A = InstanceLife("agent-a", "gpu", at(0), at(4), 4.0, 4, instance_id="i-a")
B = InstanceLife("agent-b", "cpu", at(0), None, 0.5, 1, instance_id="i-b")
LIVES = [A, B]
NOW = at(12)


def use(
    alloc: str,
    start: float,
    end: float | None,
    placement: dict[str, int],
    *,
    pool: str = "gpu",
    trial: int | None = None,
    experiment: int | None = None,
    user: str = "alice",
    workspace: str = "Uncategorized",
    labels: tuple[str, ...] = (),
) -> AllocationUse:
    return AllocationUse(
        allocation_id=alloc,
        start=at(start),
        end=at(end) if end is not None else None,
        placement=placement,
        pool=pool,
        trial_id=trial,
        experiment_id=experiment,
        username=user,
        workspace=workspace,
        labels=labels,
    )


# (allocation, slot-hours, priced slot-hours, USD), each computed by hand.
TABLE = [
    # 2 slots of A for 1 h at $1/slot-h
    (use("t1.1", 1, 2, {"agent-a": 2}, trial=1, experiment=1, labels=("x",)), 2, 2, 2.00),
    # 4 slots of A for 2 h, but A ended after the first: 4 slot-h priced, 4 unpriced
    (use("t2.1", 3, 5, {"agent-a": 4}, trial=2, experiment=1, labels=("x", "y")), 8, 4, 4.00),
    # a static agent: used, not priced
    (use("c1.1", 0, 10, {"static-1": 1}, pool="static", user="bob", workspace="ws"), 10, 0, 0.0),
    # two agents: 2 slots of A for 1 h ($2) and B's slot for 1 h ($0.50)
    (use("t3.1", 1.5, 2.5, {"agent-a": 2, "agent-b": 1}, trial=3, experiment=2), 3, 3, 2.50),
    # still running on B from 09:00, now 12:00: 3 h at $0.50
    (
        use("t4.1", 9, None, {"agent-b": 1}, pool="cpu", trial=4, experiment=2, user="bob"),
        3,
        3,
        1.5,
    ),
    # auxiliary work holds no slot: charged nothing
    (use("tb.1", 0, 1, {"agent-a": 0}, pool="gpu"), 0, 0, 0.0),
]


@pytest.mark.parametrize(("alloc", "slot_hours", "priced_hours", "usd"), TABLE)
def test_share_by_hand(alloc: AllocationUse, slot_hours: float, priced_hours: float, usd: float):
    share = allocation_share(alloc, lives_by_agent(LIVES), NOW)
    assert share.slot_seconds == pytest.approx(slot_hours * HOUR)
    assert share.priced_slot_seconds == pytest.approx(priced_hours * HOUR)
    assert share.unpriced_slot_seconds == pytest.approx((slot_hours - priced_hours) * HOUR)
    assert share.cost == pytest.approx(usd)


def test_share_within_a_window():
    # t3.1 within 01:00-02:00 keeps its first half hour: A 2 x 0.5 x $1, B 1 x 0.5 x $0.50
    alloc = TABLE[3][0]
    share = allocation_share(alloc, lives_by_agent(LIVES), NOW, (at(1), at(2)))
    assert share.cost == pytest.approx(1.25)
    assert share.slot_seconds == pytest.approx(1.5 * HOUR)
    assert allocation_share(alloc, lives_by_agent(LIVES), NOW, (at(5), at(6))) == Share()


SUMS = {
    # group -> key -> USD
    "trial": {"1": 2.0, "2": 4.0, "3": 2.5, "4": 1.5},
    "experiment": {"1": 6.0, "2": 4.0},
    "user": {"alice": 8.5, "bob": 1.5},
    "workspace": {"Uncategorized": 10.0, "ws": 0.0},
    "pool": {"gpu": 8.5, "static": 0.0, "cpu": 1.5},
    "label": {"x": 6.0, "y": 4.0},
}


@pytest.mark.parametrize("group", sorted(SUMS))
def test_sums_by_hand(group: str):
    pairs = shares_of([row[0] for row in TABLE], LIVES, NOW)
    sums = {k: v.cost for k, v in totals_by(pairs, GROUPINGS[group]).items()}
    assert sums == pytest.approx(SUMS[group])
    assert sum_shares(s for _, s in pairs).cost == pytest.approx(10.0)


def test_instance_cost_by_hand():
    assert instance_cost(A, NOW).cost == pytest.approx(16.0)  # 4 h at $4
    assert instance_cost(B, NOW).cost == pytest.approx(6.0)  # 12 h at $0.50, still running
    assert instance_cost(A, NOW, (at(3), at(10))).cost == pytest.approx(4.0)
    static = InstanceLife("s", "p", at(0), at(1), 0.0, 8)
    assert instance_cost(static, NOW) == Share(8 * HOUR, 0.0, 0.0)


@pytest.mark.parametrize(
    ("a", "b", "seconds"),
    [((0, 2), (1, 3), HOUR), ((0, 1), (1, 2), 0.0), ((0, 4), (1, 2), HOUR), ((2, 3), (0, 1), 0)],
)
def test_overlap(a: tuple[float, float], b: tuple[float, float], seconds: float):
    assert overlap_seconds(at(a[0]), at(a[1]), at(b[0]), at(b[1])) == seconds


# --- properties ---------------------------------------------------------------------------------

minutes = st.integers(min_value=0, max_value=48 * 60)


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[InstanceLife], list[AllocationUse], datetime]:
    lives = []
    for i in range(draw(st.integers(1, 3))):
        start = draw(minutes)
        end = draw(st.one_of(st.none(), st.integers(start, 48 * 60)))
        lives.append(
            InstanceLife(
                f"agent-{i}",
                draw(st.sampled_from(["p1", "p2"])),
                T0 + timedelta(minutes=start),
                T0 + timedelta(minutes=end) if end is not None else None,
                draw(st.sampled_from([0.0, 0.5, 1.0, 3.2])),
                draw(st.integers(0, 8)),
            )
        )
    uses = []
    for j in range(draw(st.integers(0, 6))):
        start = draw(minutes)
        end = draw(st.one_of(st.none(), st.integers(start, 48 * 60)))
        agents = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True))
        uses.append(
            AllocationUse(
                f"a{j}",
                T0 + timedelta(minutes=start),
                T0 + timedelta(minutes=end) if end is not None else None,
                {f"agent-{k}": draw(st.integers(0, 4)) for k in agents},
                pool=draw(st.sampled_from(["p1", "p2"])),
                username=draw(st.sampled_from(["u1", "u2"])),
            )
        )
    return lives, uses, T0 + timedelta(minutes=48 * 60)


@given(scenario(), minutes)
def test_windows_add_up(case, split: int):
    lives, uses, now = case
    cut = T0 + timedelta(minutes=split)
    by_agent = lives_by_agent(lives)
    for u in uses:
        whole = allocation_share(u, by_agent, now)
        first = allocation_share(u, by_agent, now, (T0 - timedelta(days=1), cut))
        second = allocation_share(u, by_agent, now, (cut, now + timedelta(days=1)))
        both = first + second
        assert both.cost == pytest.approx(whole.cost, abs=1e-9)
        assert both.slot_seconds == pytest.approx(whole.slot_seconds, abs=1e-6)


@given(scenario())
def test_groups_add_up_and_nothing_is_negative(case):
    lives, uses, now = case
    pairs = shares_of(uses, lives, now)
    total = sum_shares(s for _, s in pairs)
    for group in ("pool", "user"):  # every allocation has exactly one pool and one user
        groups = totals_by(pairs, GROUPINGS[group])
        assert sum(s.cost for s in groups.values()) == pytest.approx(total.cost, abs=1e-9)
    for _, s in pairs:
        assert s.cost >= 0 and 0 <= s.priced_slot_seconds <= s.slot_seconds + 1e-9


@given(
    st.integers(1, 8),
    st.sampled_from([0.5, 1.0, 3.2, 32.77]),
    st.integers(1, 48 * 60),
    st.lists(st.integers(1, 48 * 60 - 1), max_size=5),
)
def test_a_fully_used_instance_is_paid_exactly_once(
    slots: int, price: float, life_minutes: int, cuts: list[int]
):
    # Every slot busy for the instance's whole life, in pieces: the shares sum to its cost.
    end = T0 + timedelta(minutes=life_minutes)
    life = InstanceLife("agent", "p", T0, end, price, slots)
    points = sorted({0, life_minutes, *(c for c in cuts if c < life_minutes)})
    uses = [
        AllocationUse(
            f"a{i}-{slot}",
            T0 + timedelta(minutes=lo),
            T0 + timedelta(minutes=hi),
            {"agent": 1},
        )
        for i, (lo, hi) in enumerate(itertools.pairwise(points))
        for slot in range(slots)
    ]
    paid = sum_shares(s for _, s in shares_of(uses, [life], end)).cost
    assert paid == pytest.approx(instance_cost(life, end).cost)
