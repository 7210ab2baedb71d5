"""The experiment and trial transition tables."""

from __future__ import annotations

import itertools

import pytest

from controlplane.domain.errors import InvalidTransition
from controlplane.domain.states import (
    EXPERIMENT_TRANSITIONS,
    TERMINAL,
    TRIAL_TRANSITIONS,
    RunState,
    check_transition,
)

TABLES = {"experiment": EXPERIMENT_TRANSITIONS, "trial": TRIAL_TRANSITIONS}


@pytest.mark.parametrize("name", TABLES)
def test_terminal_states_have_no_way_out(name: str) -> None:
    for src, _dst in TABLES[name]:
        assert src not in TERMINAL


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
        (RunState.COMPLETED, RunState.ACTIVE, False),
        (RunState.CANCELED, RunState.PAUSED, False),
        (RunState.STOPPING_KILLED, RunState.ACTIVE, False),
        (RunState.STOPPING_CANCELED, RunState.STOPPING_KILLED, True),
        (RunState.PAUSED, RunState.COMPLETED, False),
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
