"""Experiment and trial states and the one transition table for each.

Names are Determined's proto enum names without the `STATE_` prefix; the wire form adds it back.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum
from typing import TypeVar

from controlplane.domain.errors import InvalidTransition


class RunState(StrEnum):
    """Shared by experiments and trials, as in Determined's `experimentv1State`."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_ERROR = "STOPPING_ERROR"
    STOPPING_KILLED = "STOPPING_KILLED"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"
    DELETED = "DELETED"

    @property
    def wire(self) -> str:
        return f"STATE_{self.value}"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL

    @classmethod
    def from_wire(cls, value: str) -> RunState:
        return cls(value.removeprefix("STATE_"))


TERMINAL = frozenset({RunState.COMPLETED, RunState.CANCELED, RunState.ERROR, RunState.DELETED})

S = RunState

# The one way out of an end: `det experiment continue` (Determined's ContinueExperiment).
CONTINUED = "continued by its owner (det experiment continue); it resumes from its checkpoint"

# One row per allowed edge, with why it exists.
EXPERIMENT_TRANSITIONS: dict[tuple[RunState, RunState], str] = {
    (S.ACTIVE, S.PAUSED): "user paused; running trials are asked to checkpoint and stop",
    (S.PAUSED, S.ACTIVE): "user activated; trials are queued again",
    (S.ACTIVE, S.STOPPING_CANCELED): "user cancelled; trials checkpoint then stop",
    (S.PAUSED, S.STOPPING_CANCELED): "user cancelled a paused experiment",
    (S.ACTIVE, S.STOPPING_KILLED): "user killed; containers are killed without a checkpoint",
    (S.PAUSED, S.STOPPING_KILLED): "user killed a paused experiment",
    (S.STOPPING_CANCELED, S.STOPPING_KILLED): "kill escalates a cancel in progress",
    (S.ACTIVE, S.STOPPING_COMPLETED): "the searcher finished; remaining trials drain",
    (S.ACTIVE, S.STOPPING_ERROR): "every trial errored, or the searcher failed",
    (S.STOPPING_COMPLETED, S.COMPLETED): "the last trial exited",
    (S.STOPPING_CANCELED, S.CANCELED): "the last trial stopped",
    (S.STOPPING_KILLED, S.CANCELED): "the last container was killed",
    (S.STOPPING_ERROR, S.ERROR): "the last trial exited after an error",
    (S.ACTIVE, S.COMPLETED): "nothing was running when the searcher finished",
    (S.ACTIVE, S.ERROR): "failed before any trial ran",
    (S.ACTIVE, S.CANCELED): "cancelled before any trial ran",
    (S.PAUSED, S.CANCELED): "cancelled or killed while nothing ran",
    (S.STOPPING_COMPLETED, S.STOPPING_KILLED): "kill while draining",
    (S.STOPPING_ERROR, S.STOPPING_KILLED): "kill while failing",
    (S.PAUSED, S.STOPPING_COMPLETED): "the searcher finished while the experiment was paused",
    (S.PAUSED, S.STOPPING_ERROR): "the searcher failed while the experiment was paused",
    **{(end, S.ACTIVE): CONTINUED for end in (S.COMPLETED, S.CANCELED, S.ERROR)},
}

TRIAL_TRANSITIONS: dict[tuple[RunState, RunState], str] = {
    (S.ACTIVE, S.PAUSED): "experiment paused; the trial checkpoints and releases its slots",
    (S.PAUSED, S.ACTIVE): "experiment activated; the trial is queued again",
    (S.ACTIVE, S.STOPPING_COMPLETED): "the searcher stopped the trial; it checkpoints and exits",
    (S.ACTIVE, S.STOPPING_CANCELED): "experiment cancelled",
    (S.PAUSED, S.STOPPING_CANCELED): "experiment cancelled while paused",
    (S.ACTIVE, S.STOPPING_KILLED): "the trial or its experiment was killed; SIGKILL follows",
    (S.PAUSED, S.STOPPING_KILLED): "killed while paused, its checkpointing allocation still up",
    (S.STOPPING_CANCELED, S.STOPPING_KILLED): "kill escalates a cancel",
    (S.STOPPING_COMPLETED, S.STOPPING_KILLED): "kill while the trial drains",
    (S.STOPPING_ERROR, S.STOPPING_KILLED): "kill while the failing trial exits",
    (S.ACTIVE, S.STOPPING_ERROR): "the trial failed past max_restarts",
    (S.ACTIVE, S.COMPLETED): "the trial exited 0 without a pending preemption",
    (S.ACTIVE, S.ERROR): "the trial failed and nothing runs any more",
    (S.ACTIVE, S.CANCELED): "cancelled while nothing ran",
    (S.PAUSED, S.CANCELED): "cancelled or killed while paused (nothing runs)",
    (S.STOPPING_COMPLETED, S.COMPLETED): "the trial exited after the searcher stopped it",
    (S.STOPPING_CANCELED, S.CANCELED): "the trial exited after a cancel",
    (S.STOPPING_KILLED, S.CANCELED): "the container was killed",
    (S.STOPPING_ERROR, S.ERROR): "the failing trial exited",
    (S.PAUSED, S.STOPPING_COMPLETED): "the searcher closed a paused trial still checkpointing",
    (S.PAUSED, S.COMPLETED): "the searcher closed a paused trial (nothing runs)",
    **{(end, S.ACTIVE): CONTINUED for end in (S.COMPLETED, S.CANCELED, S.ERROR)},
}


class AllocationState(StrEnum):
    """One attempt to run a task; its containers' states, summarised (forward only)."""

    ASSIGNED = "ASSIGNED"
    PULLING = "PULLING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    TERMINATED = "TERMINATED"

    @property
    def wire(self) -> str:
        return f"STATE_{self.value}"


A = AllocationState

ALLOCATION_TRANSITIONS: dict[tuple[AllocationState, AllocationState], str] = {
    (A.ASSIGNED, A.PULLING): "the agent is pulling the image",
    (A.ASSIGNED, A.STARTING): "the agent is starting the container",
    (A.ASSIGNED, A.RUNNING): "the container started",
    (A.PULLING, A.STARTING): "image pulled; starting the container",
    (A.PULLING, A.RUNNING): "the container started",
    (A.STARTING, A.RUNNING): "the container started",
    (A.ASSIGNED, A.TERMINATED): "ended before it started (killed, launch failed, agent lost)",
    (A.PULLING, A.TERMINATED): "ended while pulling (image not found, killed, agent lost)",
    (A.STARTING, A.TERMINATED): "ended while starting",
    (A.RUNNING, A.TERMINATED): "a container exited, was killed, or its agent was lost",
}

ALLOCATION_ORDER = {state: index for index, state in enumerate(AllocationState)}

# How far an ACTIVE experiment's allocations have got, most progressed first: Determined's
# enrichExperimentState (api_experiment.go) shows an ACTIVE experiment as RUNNING when any of
# its allocations runs, else STARTING, else PULLING, else QUEUED (an allocation placed but not
# yet pulling, or none at all). Its clients wait on these (wait_for_experiment_state(RUNNING)).
_LIVE_EXPERIMENT_STATES = (
    (A.RUNNING, "STATE_RUNNING"),
    (A.STARTING, "STATE_STARTING"),
    (A.PULLING, "STATE_PULLING"),
)


def experiment_wire_state(state: RunState, allocation_states: Collection[str]) -> str:
    """The experimentv1State the API shows: the stored state, except that ACTIVE becomes
    QUEUED/PULLING/STARTING/RUNNING by the states of the experiment's open allocations."""
    if state is not RunState.ACTIVE:
        return state.wire
    for live, wire in _LIVE_EXPERIMENT_STATES:
        if live.value in allocation_states:
            return wire
    return "STATE_QUEUED"


# The derived states a client may send back in a state filter: each is stored as ACTIVE.
ACTIVE_SUBSTATES = frozenset({"QUEUED", "PULLING", "STARTING", "RUNNING"})


def stored_state_name(wire: str) -> str:
    """The stored state a filter's `STATE_…` name selects (a derived one selects ACTIVE)."""
    name = wire.removeprefix("STATE_")
    return RunState.ACTIVE.value if name in ACTIVE_SUBSTATES else name


_State = TypeVar("_State", RunState, AllocationState)


def check_transition(
    table: dict[tuple[_State, _State], str], current: _State, target: _State, what: str
) -> str:
    """Return the edge's reason, or raise InvalidTransition naming both states."""
    reason = table.get((current, target))
    if reason is None:
        raise InvalidTransition(f"{what} is {current.wire}; it cannot move to {target.wire}")
    return reason
