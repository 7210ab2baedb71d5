"""Detached runs: what a reported state means, the edges a detached trial may take, and the
experiment's state from its trials (Determined's most-progressed ranking)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.errors import InvalidArgument, InvalidTransition
from controlplane.domain.states import RunState
from controlplane.domain.unmanaged import (
    LOST_AFTER,
    UNMANAGED_EXPERIMENT_TRANSITIONS,
    UNMANAGED_TRIAL_TRANSITIONS,
    check_external_id,
    check_unmanaged_trial_move,
    experiment_state,
    is_lost,
    reported_state,
)

S = RunState


@pytest.mark.parametrize(
    ("wire", "state"),
    [
        ("STATE_RUNNING", S.ACTIVE),
        ("STATE_ACTIVE", S.ACTIVE),
        ("STATE_PAUSED", S.PAUSED),
        ("STATE_COMPLETED", S.COMPLETED),
        ("STATE_ERROR", S.ERROR),
        ("STATE_CANCELED", S.CANCELED),
    ],
)
def test_reported_state(wire: str, state: RunState) -> None:
    assert reported_state(wire) is state


@pytest.mark.parametrize("wire", ["STATE_STOPPING_KILLED", "RUNNING", "", "STATE_DELETED", "x\0"])
def test_a_state_a_run_cannot_report(wire: str) -> None:
    with pytest.raises(InvalidArgument, match="cannot report"):
        reported_state(wire)


@pytest.mark.parametrize(
    ("current", "target", "moves"),
    [
        (S.PAUSED, S.ACTIVE, True),
        (S.ACTIVE, S.COMPLETED, True),
        (S.ACTIVE, S.ERROR, True),
        (S.COMPLETED, S.ACTIVE, True),  # resumed under the same external ids
        (S.ERROR, S.ACTIVE, True),
        (S.PAUSED, S.COMPLETED, True),
        (S.ACTIVE, S.ACTIVE, False),  # a repeated report
        (S.COMPLETED, S.COMPLETED, False),
    ],
)
def test_trial_edges(current: RunState, target: RunState, moves: bool) -> None:
    reason = check_unmanaged_trial_move(current, target, "trial 1")
    assert (reason is not None) == moves
    if moves:
        assert reason == UNMANAGED_TRIAL_TRANSITIONS[(current, target)]


@pytest.mark.parametrize(
    ("current", "target"),
    [(S.COMPLETED, S.ERROR), (S.ERROR, S.COMPLETED), (S.DELETED, S.ACTIVE), (S.ACTIVE, S.DELETED)],
)
def test_trial_edges_refused(current: RunState, target: RunState) -> None:
    with pytest.raises(InvalidTransition, match="trial 1"):
        check_unmanaged_trial_move(current, target, "trial 1")


@pytest.mark.parametrize(
    ("trials", "expected"),
    [
        ([], None),
        ([S.PAUSED], S.PAUSED),
        ([S.PAUSED, S.ERROR], S.ERROR),
        ([S.ERROR, S.COMPLETED], S.COMPLETED),
        ([S.COMPLETED, S.ACTIVE, S.ERROR], S.ACTIVE),
        ([S.CANCELED], None),  # not ranked: the experiment keeps its state
        ([S.CANCELED, S.COMPLETED], S.COMPLETED),
    ],
)
def test_experiment_follows_its_most_progressed_trial(
    trials: list[RunState], expected: RunState | None
) -> None:
    assert experiment_state(trials) is expected


@given(st.lists(st.sampled_from(list(RunState)), max_size=8))
def test_experiment_state_is_one_of_its_trials_and_any_move_between_them_is_allowed(
    trials: list[RunState],
) -> None:
    state = experiment_state(trials)
    if state is None:
        assert not {S.PAUSED, S.ERROR, S.COMPLETED, S.ACTIVE} & set(trials)
        return
    assert state in trials
    for other in {S.PAUSED, S.ERROR, S.COMPLETED, S.ACTIVE} - {state}:
        assert (other, state) in UNMANAGED_EXPERIMENT_TRANSITIONS


@pytest.mark.parametrize("value", ["run-1", "laptop sweep/ä", "x" * 255])
def test_external_ids_kept(value: str) -> None:
    assert check_external_id(value, "externalTrialId") == value


@pytest.mark.parametrize("value", ["a\x00b", "a\nb", "\x7f", "tab\there"])
def test_external_ids_refused(value: str) -> None:
    with pytest.raises(InvalidArgument, match="externalTrialId"):
        check_external_id(value, "externalTrialId")


T0 = datetime(2026, 12, 7, tzinfo=UTC)


@pytest.mark.parametrize(
    ("state", "last", "now", "lost"),
    [
        (S.ACTIVE, T0, T0 + LOST_AFTER + timedelta(seconds=1), True),
        (S.ACTIVE, T0, T0 + LOST_AFTER, False),  # exactly at the limit: not yet
        (S.ACTIVE, T0, T0 + timedelta(minutes=1), False),
        (S.ACTIVE, None, T0 + timedelta(days=1), False),
        (S.PAUSED, T0, T0 + timedelta(days=1), False),
        (S.COMPLETED, T0, T0 + timedelta(days=1), False),
    ],
)
def test_is_lost(state: RunState, last: datetime | None, now: datetime, lost: bool) -> None:
    assert is_lost(state, last, now) is lost
