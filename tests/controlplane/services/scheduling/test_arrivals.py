"""services/scheduling/arrivals.py: the idle slots a pass leaves, and which arrivals need a pass."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.services.scheduling.arrivals import idle_slots_after, pass_now
from resource_pools.types import (
    AgentState,
    Placement,
    PoolSnapshot,
    SchedulingPlan,
    StartAllocation,
)


def _start(task_id: str, *placements: tuple[str, int]) -> StartAllocation:
    return StartAllocation(task_id, tuple(Placement(a, n) for a, n in placements))


@pytest.mark.parametrize(
    ("agents", "starts", "skipped", "idle"),
    [
        ([AgentState("a", 4)], [], [], 4),
        ([AgentState("a", 4, used_slots=3)], [], [], 1),
        ([AgentState("a", 4, used_slots=3)], [_start("t1", ("a", 1))], [], 0),
        # Two agents; a start over both takes from each.
        ([AgentState("a", 2), AgentState("b", 2)], [_start("t1", ("a", 2), ("b", 1))], [], 1),
        # A start the pass had to skip (paused meanwhile, no launch spec) leaves its slots idle.
        ([AgentState("a", 2)], [_start("t1", ("a", 1)), _start("t2", ("a", 1))], ["t2"], 1),
        # Slots of disabled or draining agents take no new work: not idle.
        ([AgentState("a", 2, enabled=False), AgentState("b", 2, draining=True)], [], [], 0),
        # A zero-slot start takes an aux place, not a slot.
        ([AgentState("a", 1)], [_start("t1", ("a", 0))], [], 1),
        ([], [], [], 0),
    ],
)
def test_idle_slots_after_a_pass(
    agents: list[AgentState], starts: list[StartAllocation], skipped: list[str], idle: int
) -> None:
    snapshot = PoolSnapshot(agents=tuple(agents))
    assert idle_slots_after(snapshot, SchedulingPlan(start=tuple(starts)), skipped) == idle


@pytest.mark.parametrize(
    ("idle", "slots", "now"),
    [
        (None, 1, True),  # no pass yet: nothing known
        (0, 1, False),  # no room: the tick takes it
        (1, 1, True),
        (1, 2, False),  # more than is idle cannot start either
        (3, 2, True),
        (0, 0, True),  # a zero-slot task: aux capacity is another count
    ],
)
def test_which_arrivals_need_a_pass_now(idle: int | None, slots: int, now: bool) -> None:
    assert pass_now(idle, slots) is now


@given(st.integers(0, 64), st.integers(0, 64))
def test_an_arrival_waits_only_when_it_cannot_fit_in_what_is_idle(idle: int, slots: int) -> None:
    assert pass_now(idle, slots) is (slots == 0 or slots <= idle)
