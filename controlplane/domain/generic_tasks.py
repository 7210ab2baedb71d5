"""Generic tasks (`det task create`): their wire state, what a pause does, and the task tree
a kill reaches. Pure: the service reads the rows and applies what these decide."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from controlplane.domain.command_states import CommandState
from controlplane.domain.errors import Conflict

C = CommandState
# A tree deeper than this is a cycle in the rows (a parent is named before it exists, so a
# real tree cannot have one); the walk stops rather than loop.
MAX_DEPTH = 1000


class GenericTaskState(StrEnum):
    """v1GenericTaskState."""

    UNSPECIFIED = "GENERIC_TASK_STATE_UNSPECIFIED"
    ACTIVE = "GENERIC_TASK_STATE_ACTIVE"
    CANCELED = "GENERIC_TASK_STATE_CANCELED"
    COMPLETED = "GENERIC_TASK_STATE_COMPLETED"
    ERROR = "GENERIC_TASK_STATE_ERROR"
    PAUSED = "GENERIC_TASK_STATE_PAUSED"
    STOPPING_PAUSED = "GENERIC_TASK_STATE_STOPPING_PAUSED"
    STOPPING_CANCELED = "GENERIC_TASK_STATE_STOPPING_CANCELED"


def generic_state(state: CommandState, exit_code: int | None, killed: bool) -> GenericTaskState:
    """The generic-task state Determined shows for a command-machinery state: a pause shows as
    PAUSED once accepted (Determined sets PAUSED in the pause request itself, while the
    container is still being stopped) and an unpause as ACTIVE; an ended task is CANCELED when
    killed, COMPLETED on exit code 0, ERROR otherwise."""
    if state in (C.ACTIVE, C.UNPAUSING):
        return GenericTaskState.ACTIVE
    if state in (C.PAUSING, C.PAUSED):
        return GenericTaskState.PAUSED
    if state is C.TERMINATING:
        return GenericTaskState.STOPPING_CANCELED
    if killed:
        return GenericTaskState.CANCELED
    return GenericTaskState.COMPLETED if exit_code == 0 else GenericTaskState.ERROR


def pause_target(state: CommandState, *, running: bool, no_pause: bool, what: str) -> C | None:
    """Where a pause moves a task: PAUSED when queued, PAUSING when its container runs (or is
    still being stopped for an earlier pause), None when it is paused or pausing already (a
    repeated pause changes nothing)."""
    if no_pause:
        raise Conflict(f"{what} was created with noPause: it cannot be paused")
    if state in (C.PAUSED, C.PAUSING):
        return None
    if state is C.UNPAUSING:
        return C.PAUSING
    if state is not C.ACTIVE:
        raise Conflict(f"{what} is {state.value.lower()}: only an active task can be paused")
    return C.PAUSING if running else C.PAUSED


def unpause_target(state: CommandState, *, what: str) -> C | None:
    """An unpause queues a PAUSED task again, or (its container still being stopped) has the
    container's end queue it; an active one is left as it is."""
    if state is C.PAUSED:
        return C.ACTIVE
    if state is C.PAUSING:
        return C.UNPAUSING
    if state in (C.ACTIVE, C.UNPAUSING):
        return None
    raise Conflict(f"{what} is {state.value.lower()}: only a paused task can be unpaused")


def root_of(task_id: str, parents: Mapping[str, str | None]) -> str:
    """The top of the tree `task_id` is in (`parents`: task → its parent, None at a root)."""
    current = task_id
    for _ in range(MAX_DEPTH):
        parent = parents.get(current)
        if parent is None:
            return current
        current = parent
    return current


def subtree(task_id: str, parents: Mapping[str, str | None]) -> list[str]:
    """`task_id` and every task below it, parents before their children."""
    children: dict[str, list[str]] = {}
    for child, parent in parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(child)
    out: list[str] = []
    seen: set[str] = set()
    frontier = [task_id]
    while frontier:
        current = frontier.pop(0)
        if current in seen:
            continue
        seen.add(current)
        out.append(current)
        frontier.extend(sorted(children.get(current, [])))
    return out


def kill_target(state: CommandState, *, running: bool) -> tuple[C, str | None] | None:
    """Where a kill moves a task and, when it ends at once, its exit status; None when it is
    ended or being killed already. A task with a container goes TERMINATING (the container's
    end ends it); one without (queued, paused) ends now."""
    if state in (C.TERMINATED, C.TERMINATING):
        return None
    if state is C.PAUSED:
        return C.TERMINATED, "killed while paused"
    if state in (C.PAUSING, C.UNPAUSING) or running:
        return C.TERMINATING, None
    return C.TERMINATED, "killed before it started"
