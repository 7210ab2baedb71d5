"""Commands (`det cmd run`): their states, the one transition table, and what an exit means.

A command runs once. It waits (ACTIVE, no allocation), runs (ACTIVE, with one), and ends
(TERMINATED) with its first allocation, whatever the exit code: Determined never restarts a
command. A kill while it runs moves it to TERMINATING until the container is gone.
Generic tasks (`det task create`) run through the same table and may also be paused: PAUSING
while their container is killed, PAUSED (no allocation, not queued) until unpaused; an unpause
that comes while the container is still being killed is UNPAUSING, and the container's end
queues the task again.
The wire state (taskv1State) is derived from this state and the live allocation's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from controlplane.domain.errors import InvalidTransition
from controlplane.domain.trial_exit import AllocationExit


class CommandState(StrEnum):
    ACTIVE = "ACTIVE"
    TERMINATING = "TERMINATING"
    TERMINATED = "TERMINATED"
    PAUSING = "PAUSING"
    PAUSED = "PAUSED"
    UNPAUSING = "UNPAUSING"


C = CommandState

COMMAND_TRANSITIONS: dict[tuple[CommandState, CommandState], str] = {
    (C.ACTIVE, C.TERMINATED): "the command's container exited, or it was killed while queued",
    (C.ACTIVE, C.TERMINATING): "killed while running; its containers get SIGKILL",
    (C.TERMINATING, C.TERMINATED): "the killed command's container ended",
    # Generic tasks only (services/generic_tasks.py).
    (C.ACTIVE, C.PAUSED): "paused while queued: it leaves the queue",
    (C.ACTIVE, C.PAUSING): "paused while running; its containers get SIGKILL, the task stays open",
    (C.PAUSING, C.PAUSED): "the paused task's container ended; it waits for an unpause",
    (C.PAUSING, C.TERMINATING): "killed while its pause was under way",
    (C.PAUSED, C.ACTIVE): "unpaused: queued again for a new allocation",
    (C.PAUSED, C.TERMINATED): "killed while paused (it has no container)",
    (C.PAUSING, C.UNPAUSING): "unpaused while its container is still being killed",
    (C.UNPAUSING, C.PAUSING): "paused again while its container is still being killed",
    (C.UNPAUSING, C.ACTIVE): "the container killed for the pause ended: queued again",
    (C.UNPAUSING, C.TERMINATING): "killed while its unpause waited for its old container",
}

# Determined shows an allocation that is placed but not yet pulling as still queued.
_LIVE_WIRE = {
    "ASSIGNED": "STATE_QUEUED",
    "PULLING": "STATE_PULLING",
    "STARTING": "STATE_STARTING",
    "RUNNING": "STATE_RUNNING",
    "TERMINATED": "STATE_TERMINATED",
}


def allocation_wire_state(state: str) -> str:
    """taskv1State of an allocation (v1Allocation.state) from its container-level state."""
    return _LIVE_WIRE.get(state, "STATE_UNSPECIFIED")


def check_command_transition(current: CommandState, target: CommandState, what: str) -> str:
    reason = COMMAND_TRANSITIONS.get((current, target))
    if reason is None:
        raise InvalidTransition(f"{what} is {current.value}; it cannot move to {target.value}")
    return reason


def wire_state(state: CommandState, allocation_state: str | None) -> str:
    """taskv1State of a command: its own end states, else its live allocation's, else QUEUED."""
    if state is C.TERMINATED:
        return "STATE_TERMINATED"
    if state in (C.TERMINATING, C.PAUSING, C.UNPAUSING):
        return "STATE_TERMINATING"
    if state is C.PAUSED:
        return "STATE_WAITING"
    if allocation_state is None:
        return "STATE_QUEUED"
    return allocation_wire_state(allocation_state)


@dataclass(frozen=True)
class CommandExit:
    """How a command ended: its exit code (None when it never ran to an exit) and why."""

    exit_code: int | None
    status: str
    failed: bool


def command_after_exit(ended: AllocationExit, *, killed: bool) -> CommandExit:
    """The end of a command's (only) allocation.

    A user's kill is not a failure of the command's code but still a failed run (the CLI
    exits non-zero); a lost agent (AGENT_FAILED) ends the command too, unlike a trial, which
    is re-queued: a command may have side effects, so running it twice is not safe.
    """
    if killed:
        return CommandExit(ended.exit_code, "killed by user request", failed=True)
    if ended.killed and not (ended.exit_code == 0 and ended.failure is None):
        # E.g. its agent was disabled without drain: the master sent the SIGKILL.
        return CommandExit(ended.exit_code, "killed by the master", failed=True)
    if ended.failure and ended.exit_code is None:
        return CommandExit(None, f"failed: {ended.failure}", failed=True)
    if ended.exit_code == 0 and ended.failure is None:
        return CommandExit(0, "command exited successfully", failed=False)
    if ended.exit_code is None:
        return CommandExit(None, "ended without an exit code", failed=True)
    return CommandExit(ended.exit_code, f"command exited with code {ended.exit_code}", failed=True)


# Where the end of a generic task's allocation leaves a pause in progress (the task stays open).
_PAUSE_EXITS = {C.PAUSING: C.PAUSED, C.UNPAUSING: C.ACTIVE}


def state_after_exit(current: CommandState) -> CommandState:
    """Where a command's (or generic task's) allocation end leaves it: a pause under way ends
    in PAUSED, an unpause that waited for the paused container in ACTIVE (queued again); the
    task stays open in both. Anything else ends the task."""
    return _PAUSE_EXITS.get(current, C.TERMINATED)


def is_pause_exit(current: CommandState) -> bool:
    """Whether an allocation's end in this state is a pause's, which leaves the task open."""
    return current in _PAUSE_EXITS
