"""Detached (unmanaged) runs: core_v2 off the cluster reports its trial's state itself
(PATCH /api/v1/trials/{id}); the master runs nothing. What a reported state means, the edges
a detached trial and its experiment may take, and the experiment's state from its trials
(Determined's UpdateUnmanagedExperimentStatesTx: the most progressed trial's state)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from controlplane.domain.errors import InvalidArgument, InvalidTransition
from controlplane.domain.states import RunState

S = RunState

# A running detached trial whose run has not been heard from for this long has lost its run
# (Determined's MarkLostTrials: 5 minutes; core_v2 heartbeats every minute).
LOST_AFTER = timedelta(minutes=5)
LOST_REASON = "no heartbeat from the detached run for 5 minutes: its run is lost"

# The states a detached run reports, as stored: RUNNING (and its siblings) is ACTIVE.
_REPORTED = {
    "STATE_RUNNING": S.ACTIVE,
    "STATE_ACTIVE": S.ACTIVE,
    "STATE_PAUSED": S.PAUSED,
    "STATE_COMPLETED": S.COMPLETED,
    "STATE_ERROR": S.ERROR,
    "STATE_CANCELED": S.CANCELED,
}

# One row per edge of a detached trial, with why it exists.
UNMANAGED_TRIAL_TRANSITIONS: dict[tuple[RunState, RunState], str] = {
    (S.PAUSED, S.ACTIVE): "the detached run started and reports RUNNING",
    (S.ACTIVE, S.COMPLETED): "the detached run closed its context without an error",
    (S.ACTIVE, S.ERROR): "the detached run ended with an exception or a non-zero exit, or was lost",
    (S.ACTIVE, S.CANCELED): "the detached run reported itself canceled",
    (S.ACTIVE, S.PAUSED): "the detached run reported itself paused",
    (S.PAUSED, S.COMPLETED): "the detached run ended before it reported RUNNING",
    (S.PAUSED, S.ERROR): "the detached run failed before it reported RUNNING",
    (S.PAUSED, S.CANCELED): "the detached run was canceled before it reported RUNNING",
    **{
        (end, S.ACTIVE): "the detached run was resumed under the same external ids"
        for end in (S.COMPLETED, S.ERROR, S.CANCELED)
    },
}

# The experiment follows its most progressed trial (Determined's ranking: RUNNING over
# COMPLETED over ERROR over PAUSED); any of these may follow any other.
_RANK = {S.PAUSED: 10, S.ERROR: 20, S.COMPLETED: 30, S.ACTIVE: 40}
UNMANAGED_EXPERIMENT_TRANSITIONS: dict[tuple[RunState, RunState], str] = {
    (a, b): "its detached trials' states moved it (the most progressed one's state)"
    for a in _RANK
    for b in _RANK
    if a is not b
}


def reported_state(wire: str) -> RunState:
    """The stored state for what a detached run reports (`trialv1State` name)."""
    state = _REPORTED.get(wire)
    if state is None:
        known = ", ".join(sorted(_REPORTED))
        raise InvalidArgument(f"a detached trial cannot report state {wire!r}; use one of {known}")
    return state


def check_unmanaged_trial_move(current: RunState, target: RunState, what: str) -> str | None:
    """The edge's reason; None when the trial is in that state already."""
    if current is target:
        return None
    reason = UNMANAGED_TRIAL_TRANSITIONS.get((current, target))
    if reason is None:
        raise InvalidTransition(f"{what} is {current.value}; it cannot move to {target.value}")
    return reason


def experiment_state(trial_states: Iterable[RunState]) -> RunState | None:
    """The state of a detached run's experiment: its most progressed trial's (None: no trial
    has a ranked state, and the experiment keeps its own)."""
    ranked = [s for s in trial_states if s in _RANK]
    return max(ranked, key=_RANK.__getitem__) if ranked else None


def check_external_id(value: str, what: str) -> str:
    """An external id names one experiment (or one trial in it) and becomes part of a task id:
    printable text only (a NUL or a control character would not survive PostgreSQL or logs)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidArgument(f"{what} must not contain control characters or NUL")
    return value


def is_lost(state: RunState, last_activity: datetime | None, now: datetime) -> bool:
    """Whether a detached trial's run is lost: it runs (ACTIVE) and its latest heartbeat is
    older than LOST_AFTER."""
    return state is S.ACTIVE and last_activity is not None and now - last_activity > LOST_AFTER
