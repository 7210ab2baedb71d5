"""The experiment and trial transition tables."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.errors import InvalidTransition
from controlplane.domain.states import (
    ALLOCATION_ORDER,
    ALLOCATION_TRANSITIONS,
    CONTINUED,
    EXPERIMENT_TRANSITIONS,
    TERMINAL,
    TRIAL_TRANSITIONS,
    AllocationState,
    RunState,
    check_transition,
    experiment_wire_state,
    stored_state_name,
)

TABLES = {"experiment": EXPERIMENT_TRANSITIONS, "trial": TRIAL_TRANSITIONS}


@pytest.mark.parametrize("name", TABLES)
def test_terminal_states_have_no_way_out_but_continue(name: str) -> None:
    for src, dst in TABLES[name]:
        if src in TERMINAL:
            assert dst is RunState.ACTIVE and TABLES[name][src, dst] == CONTINUED
            assert src is not RunState.DELETED


@pytest.mark.parametrize("name", TABLES)
def test_every_edge_has_a_reason(name: str) -> None:
    assert all(reason.strip() for reason in TABLES[name].values())


@pytest.mark.parametrize("name", TABLES)
def test_every_stopping_state_reaches_a_terminal_state(name: str) -> None:
    for state in RunState:
        if state.name.startswith("STOPPING_"):
            assert any(src == state and dst in TERMINAL for src, dst in TABLES[name]), state


@pytest.mark.parametrize(
    ("src", "dst", "allowed"),
    [
        (RunState.ACTIVE, RunState.PAUSED, True),
        (RunState.PAUSED, RunState.ACTIVE, True),
        (RunState.COMPLETED, RunState.ACTIVE, True),
        (RunState.COMPLETED, RunState.PAUSED, False),
        (RunState.CANCELED, RunState.PAUSED, False),
        (RunState.STOPPING_KILLED, RunState.ACTIVE, False),
        (RunState.STOPPING_CANCELED, RunState.STOPPING_KILLED, True),
        (RunState.PAUSED, RunState.COMPLETED, False),
        (RunState.PAUSED, RunState.STOPPING_COMPLETED, True),
        (RunState.PAUSED, RunState.STOPPING_ERROR, True),
        (RunState.STOPPING_COMPLETED, RunState.ACTIVE, False),
        (RunState.STOPPING_ERROR, RunState.COMPLETED, False),
    ],
)
def test_experiment_edges(src: RunState, dst: RunState, allowed: bool) -> None:
    if allowed:
        assert check_transition(EXPERIMENT_TRANSITIONS, src, dst, "experiment 1")
    else:
        with pytest.raises(InvalidTransition, match=f"{src.wire}.*{dst.wire}"):
            check_transition(EXPERIMENT_TRANSITIONS, src, dst, "experiment 1")


def test_wire_names_round_trip() -> None:
    for state in RunState:
        assert RunState.from_wire(state.wire) is state
        assert state.wire.startswith("STATE_")


def test_no_self_loops() -> None:
    for table in TABLES.values():
        assert all(a != b for a, b in itertools.chain(table))


A = AllocationState


class TestAllocationTable:
    """ASSIGNED → PULLING → STARTING → RUNNING → TERMINATED: forward only, any state may end."""

    def test_every_forward_edge_and_nothing_else(self) -> None:
        forward = {
            (a, b)
            for a, b in itertools.product(AllocationState, repeat=2)
            if ALLOCATION_ORDER[a] < ALLOCATION_ORDER[b]
        }
        assert set(ALLOCATION_TRANSITIONS) == forward

    @pytest.mark.parametrize("state", [s for s in AllocationState if s is not A.TERMINATED])
    def test_any_live_state_may_end(self, state: AllocationState) -> None:
        assert check_transition(ALLOCATION_TRANSITIONS, state, A.TERMINATED, "allocation x")

    @pytest.mark.parametrize(
        ("src", "dst"),
        [(A.RUNNING, A.STARTING), (A.TERMINATED, A.RUNNING), (A.PULLING, A.ASSIGNED)],
    )
    def test_never_backwards(self, src: AllocationState, dst: AllocationState) -> None:
        with pytest.raises(InvalidTransition, match=f"{src.wire}.*{dst.wire}"):
            check_transition(ALLOCATION_TRANSITIONS, src, dst, "allocation x")

    def test_every_edge_has_a_reason(self) -> None:
        assert all(reason.strip() for reason in ALLOCATION_TRANSITIONS.values())


@pytest.mark.parametrize(
    "src", [RunState.ACTIVE, RunState.PAUSED, RunState.STOPPING_CANCELED, RunState.STOPPING_ERROR]
)
def test_a_trial_can_be_killed_from_every_live_state_but_killed(src: RunState) -> None:
    assert check_transition(TRIAL_TRANSITIONS, src, RunState.STOPPING_KILLED, "trial 1")
    assert check_transition(TRIAL_TRANSITIONS, RunState.STOPPING_KILLED, RunState.CANCELED, "t")


def _reachable(table: dict[tuple[RunState, RunState], str], start: RunState) -> set[RunState]:
    seen, todo = {start}, [start]
    while todo:
        here = todo.pop()
        for src, dst in table:
            if src == here and dst not in seen:
                seen.add(dst)
                todo.append(dst)
    return seen


@pytest.mark.parametrize("name", TABLES)
@given(choices=st.lists(st.integers(min_value=0, max_value=50), max_size=30))
def test_any_walk_from_active_can_still_end(name: str, choices: list[int]) -> None:
    """Wherever a sequence of allowed moves leads an experiment or trial (searcher pauses and
    promotions, user pauses, stops), a terminal state stays reachable: nothing gets stuck."""
    table = TABLES[name]
    here = RunState.ACTIVE
    for choice in choices:
        exits = sorted(dst for src, dst in table if src == here)
        if not exits:
            break
        here = exits[choice % len(exits)]
    assert here.is_terminal or _reachable(table, here) & TERMINAL


# ----- the state an experiment shows (Determined's enrichExperimentState) ----------------------


@pytest.mark.parametrize(
    ("allocations", "shown"),
    [
        ((), "STATE_QUEUED"),  # nothing placed yet
        (("ASSIGNED",), "STATE_QUEUED"),  # placed, not yet pulling
        (("ASSIGNED", "PULLING"), "STATE_PULLING"),
        (("PULLING", "STARTING"), "STATE_STARTING"),
        (("ASSIGNED", "RUNNING", "STARTING"), "STATE_RUNNING"),
        (("RUNNING",), "STATE_RUNNING"),
    ],
)
def test_an_active_experiment_shows_its_allocations_progress(
    allocations: tuple[str, ...], shown: str
) -> None:
    assert experiment_wire_state(RunState.ACTIVE, frozenset(allocations)) == shown


@given(
    st.sampled_from([s for s in RunState if s is not RunState.ACTIVE]),
    st.frozensets(st.sampled_from([a.value for a in AllocationState])),
)
def test_every_other_state_is_shown_as_stored(state: RunState, allocations: frozenset[str]) -> None:
    assert experiment_wire_state(state, allocations) == state.wire


@given(st.frozensets(st.sampled_from([a.value for a in AllocationState])))
def test_running_wins_and_an_active_experiment_is_never_shown_active(
    allocations: frozenset[str],
) -> None:
    shown = experiment_wire_state(RunState.ACTIVE, allocations)
    assert shown in {"STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING"}
    assert (shown == "STATE_RUNNING") == ("RUNNING" in allocations)


@pytest.mark.parametrize(
    ("wire", "stored"),
    [
        ("STATE_RUNNING", "ACTIVE"),
        ("STATE_QUEUED", "ACTIVE"),
        ("STATE_PULLING", "ACTIVE"),
        ("STATE_STARTING", "ACTIVE"),
        ("STATE_ACTIVE", "ACTIVE"),
        ("STATE_PAUSED", "PAUSED"),
        ("COMPLETED", "COMPLETED"),
    ],
)
def test_a_filter_on_a_derived_state_selects_active(wire: str, stored: str) -> None:
    assert stored_state_name(wire) == stored
