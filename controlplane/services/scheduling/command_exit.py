"""The end of a command's container (commands, notebooks, TensorBoards, shells), read and
written as columns on Core's path.

Every task ends here once, and for trivial commands the master's CPU per task bounds the
cluster's throughput: loading the allocation, task and command as ORM objects and flushing
their changes cost about twice these five statements. A trial's end takes the ORM path
(agent_events.close_allocation): it runs the searcher and the experiment's state machine. The
decisions are the ones that path makes (`AllocationExit.reason`, `command_after_exit`, the
two transition tables).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Command, Task, Trial
from controlplane.domain.command_states import (
    CommandState,
    check_command_transition,
    command_after_exit,
    is_pause_exit,
    state_after_exit,
)
from controlplane.domain.states import ALLOCATION_TRANSITIONS, AllocationState, check_transition
from controlplane.domain.trial_exit import AllocationExit
from controlplane.services import history
from controlplane.services.reschedule import mark_freed, mark_reschedule

# The allocation, whether the master killed it, and what runs in it: built once, so
# SQLAlchemy computes its cache key once.
_ENDING = (
    select(
        Allocation.state,
        Allocation.placement,
        Allocation.end_time,
        Allocation.preempt_requested,
        Allocation.preempt_acked,
        Allocation.resource_pool,
        Allocation.task_id,
        history.kill_noted(Allocation.allocation_id),
        Trial.id,
        Command.state,
    )
    .outerjoin(Trial, Trial.task_id == Allocation.task_id)
    .outerjoin(Command, Command.task_id == Allocation.task_id)
    .where(Allocation.allocation_id == bindparam("allocation_id"))
)
_END_ALLOCATION = (
    update(Allocation)
    .where(Allocation.allocation_id == bindparam("id"), Allocation.end_time.is_(None))
    .values(
        state=AllocationState.TERMINATED.value,
        exit_reason=bindparam("reason"),
        end_time=bindparam("now"),
    )
)
_END_COMMAND = (
    update(Command)
    .where(Command.task_id == bindparam("id"))
    .values(
        state=CommandState.TERMINATED.value,
        exit_code=bindparam("code"),
        exit_status=bindparam("status"),
    )
)
_PAUSE_COMMAND = (
    update(Command)
    .where(Command.task_id == bindparam("id"), Command.state == bindparam("current"))
    .values(state=bindparam("target"))
)
_END_TASK = (
    update(Task)
    .where(Task.task_id == bindparam("id"), Task.end_time.is_(None))
    .values(end_time=bindparam("now"))
)


@dataclass(frozen=True)
class Ending:
    """An allocation as its end needs it."""

    allocation_id: str
    state: AllocationState
    placement: dict[str, Any]
    ended_before: bool
    preempt_requested: bool
    preempt_acked: bool
    resource_pool: str
    task_id: str
    killed: bool
    is_trial: bool
    command_state: CommandState | None


async def read_ending(session: AsyncSession, allocation_id: str) -> Ending | None:
    conn = await session.connection()
    row = (await conn.execute(_ENDING, {"allocation_id": allocation_id})).first()
    if row is None:
        return None
    return Ending(
        allocation_id=allocation_id,
        state=AllocationState(row[0]),
        placement=row[1] or {},
        ended_before=row[2] is not None,
        preempt_requested=bool(row[3]),
        preempt_acked=bool(row[4]),
        resource_pool=row[5],
        task_id=row[6],
        killed=bool(row[7]),
        is_trial=row[8] is not None,
        command_state=CommandState(row[9]) if row[9] is not None else None,
    )


async def end_command_allocation(
    session: AsyncSession, ending: Ending, ended: AllocationExit, now: datetime, detail: str
) -> bool:
    """What `close_allocation` does for a command's allocation: the allocation TERMINATED
    with its reason, and the command with it (it never runs twice); False if the allocation
    had ended meanwhile (nothing is written then)."""
    assert not ending.is_trial and ending.command_state is not None
    if ending.ended_before:
        return False
    terminated = AllocationState.TERMINATED
    reason = ended.reason(detail)
    why = check_transition(
        ALLOCATION_TRANSITIONS, ending.state, terminated, f"allocation {ending.allocation_id}"
    )
    conn = await session.connection()
    moved = await conn.execute(
        _END_ALLOCATION, {"id": ending.allocation_id, "reason": reason, "now": now}
    )
    if moved.rowcount != 1:
        return False
    mark_freed(session, ending.resource_pool)  # a command never comes back to the queue
    changes = [
        history.change_row(
            "allocation", ending.allocation_id, ending.state.value, terminated.value,
            f"{why}: {reason}", now,
        )
    ]  # fmt: skip
    current = ending.command_state
    if is_pause_exit(current):  # a generic task's pause or unpause: it stays open
        await _pause_done(conn, ending.task_id, current, now, changes)
        if state_after_exit(current) is CommandState.ACTIVE:
            mark_reschedule(session, ending.resource_pool)  # queued again: the pass reads it
    elif current is not CommandState.TERMINATED:
        outcome = command_after_exit(ended, killed=current is CommandState.TERMINATING)
        moving = check_command_transition(
            current, CommandState.TERMINATED, f"command {ending.task_id}"
        )
        await conn.execute(
            _END_COMMAND,
            {"id": ending.task_id, "code": outcome.exit_code, "status": outcome.status},
        )
        changes.append(
            history.change_row(
                "command", ending.task_id, current.value, CommandState.TERMINATED.value,
                f"{moving}: {outcome.status}", now,
            )
        )  # fmt: skip
        await conn.execute(_END_TASK, {"id": ending.task_id, "now": now})
    await history.insert_changes(session, changes)
    return True


async def _pause_done(
    conn: Any, task_id: str, current: CommandState, now: datetime, changes: list[Any]
) -> None:
    """A pausing generic task's container ended: PAUSED (or, unpaused meanwhile, ACTIVE and
    queued again), its task left open (no end time)."""
    target = state_after_exit(current)
    moving = check_command_transition(current, target, f"command {task_id}")
    await conn.execute(
        _PAUSE_COMMAND, {"id": task_id, "current": current.value, "target": target.value}
    )
    changes.append(history.change_row("command", task_id, current.value, target.value, moving, now))
