"""What the master does with an agent's reports: container states and logs, and the end of
allocations (also when the master ends them itself: a lost agent, a failed reattachment)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import (
    ContainerLog,
    ContainerOutput,
    ContainerState,
    ContainerStateChanged,
    SignalContainer,
)
from controlplane.db.models import Allocation, Command, Task, Trial, User
from controlplane.domain.container_ids import split_container_id
from controlplane.domain.states import ALLOCATION_ORDER, AllocationState, RunState
from controlplane.domain.task_output import read_line
from controlplane.domain.trial_exit import AgentFate, AllocationExit, trial_after_exit
from controlplane.services import commands, history, logs, search
from controlplane.services.principals import Principal
from controlplane.services.reschedule import mark_freed, mark_reschedule
from controlplane.services.scheduling import command_exit
from controlplane.services.scheduling.placements import containers_of

log = logging.getLogger("controlplane.agents")

DEFAULT_MAX_RESTARTS = 5

# Run for every container report: built once, so SQLAlchemy computes their cache keys once.
_LIVE_STATE = select(Allocation.state, Allocation.placement, Allocation.end_time).where(
    Allocation.allocation_id == bindparam("allocation_id")
)
_TASK_WITH_RUN = (
    select(Task, Trial, Command)
    .outerjoin(Trial, Trial.task_id == Task.task_id)
    .outerjoin(Command, Command.task_id == Task.task_id)
    .where(Task.task_id == bindparam("task_id"))
)


@dataclass
class Effects:
    """Messages to send once the transaction commits."""

    signals: list[tuple[str, SignalContainer]] = field(default_factory=list)

    def kill(self, agent_id: str, container_id: str) -> None:
        self.signals.append((agent_id, SignalContainer(container_id=container_id)))


def allocation_of(msg: ContainerStateChanged) -> str:
    return msg.allocation_id or split_container_id(msg.container.id)[0]


def agent_fate(msg: ContainerStateChanged, *, interrupted: bool) -> AgentFate:
    """What had become of the reporting agent when the container ended (domain/trial_exit.py)."""
    if msg.failure is not None and msg.failure.agent_restarted:
        return AgentFate.RESTARTED
    return AgentFate.INTERRUPTED if interrupted else AgentFate.HEALTHY


async def on_container_state(
    session: AsyncSession,
    agent_id: str,
    msg: ContainerStateChanged,
    now: datetime,
    *,
    interrupted: bool = False,
) -> Effects:
    """``interrupted``: the agent's cloud announced its machine's interruption."""
    if msg.container.state is not ContainerState.TERMINATED:
        return await _on_container_progress(session, agent_id, msg, now)
    effects = Effects()
    ending = await command_exit.read_ending(session, allocation_of(msg))
    if ending is None or agent_id not in ending.placement:
        log.warning("agent %s reported unknown container %s", agent_id, msg.container.id)
        return effects
    if ending.ended_before:
        return effects
    ended = AllocationExit(
        exit_code=msg.exit_code,
        failure=msg.failure.type.value if msg.failure else None,
        preempt_requested=ending.preempt_requested,
        preempt_acked=ending.preempt_acked,
        killed=ending.killed,
        agent=agent_fate(msg, interrupted=interrupted),
    )
    detail = msg.failure.message if msg.failure and msg.failure.message else ""
    if ending.is_trial or ending.command_state is None:
        alloc = await session.get(Allocation, ending.allocation_id)
        assert alloc is not None  # read in this transaction
        effects.signals += await end_allocation(
            session, alloc, ended, now, detail=detail, spare=msg.container.id
        )
    elif await command_exit.end_command_allocation(session, ending, ended, now, detail):
        effects.signals += kills_of_others(ending.allocation_id, ending.placement, msg.container.id)
    return effects


async def _on_container_progress(
    session: AsyncSession, agent_id: str, msg: ContainerStateChanged, now: datetime
) -> Effects:
    """A container pulling, starting or running: the allocation moves on (never back), read
    and written as columns, not as an object (every task sends these)."""
    effects = Effects()
    allocation_id = allocation_of(msg)
    conn = await session.connection()
    row = (await conn.execute(_LIVE_STATE, {"allocation_id": allocation_id})).first()
    if row is None or agent_id not in (row.placement or {}):
        # Not ours (or no longer): the agent must not keep running it.
        log.warning("agent %s reported unknown container %s", agent_id, msg.container.id)
        effects.kill(agent_id, msg.container.id)
        return effects
    if row.end_time is not None:
        # The allocation already ended (its agent was given up on, a reattachment failed):
        # whatever still runs of it must stop.
        effects.kill(agent_id, msg.container.id)
        return effects
    target = AllocationState(msg.container.state.value)
    current = AllocationState(row.state)
    if ALLOCATION_ORDER[target] > ALLOCATION_ORDER[current]:
        await history.move_live_allocation(session, allocation_id, current, target, now)
    return effects


async def was_killed(session: AsyncSession, alloc: Allocation) -> bool:
    return bool(await history.kills_requested(session, [alloc.allocation_id]))


async def end_allocation(
    session: AsyncSession,
    alloc: Allocation,
    ended: AllocationExit,
    now: datetime,
    *,
    detail: str = "",
    spare: str | None = None,
) -> list[tuple[str, SignalContainer]]:
    """Close the allocation; SIGKILL for each of its containers but ``spare`` (the one that
    reported its own end): one container's end ends the whole allocation."""
    await close_allocation(session, alloc, ended, now, detail=detail)
    return kills_of_others(alloc.allocation_id, alloc.placement, spare)


def kills_of_others(
    allocation_id: str, placement: dict[str, Any], spare: str | None
) -> list[tuple[str, SignalContainer]]:
    """SIGKILL for each container of the allocation but ``spare``."""
    return [
        (c.agent_id, SignalContainer(container_id=c.container_id))
        for c in containers_of(allocation_id, placement)
        if c.container_id != spare
    ]


async def close_allocation(
    session: AsyncSession,
    alloc: Allocation,
    ended: AllocationExit,
    now: datetime,
    *,
    detail: str = "",
) -> None:
    """End the allocation, free its slots, and move its trial (and experiment) or command on.

    The task with its trial or command is read in one statement before anything changes, so
    that a command's end needs no further reads and its writes go out in one flush; the state
    changes it records (the allocation's, the trial's, a next trial's) in one INSERT."""
    async with history.batched(session):
        await _close_allocation(session, alloc, ended, now, detail)


async def _close_allocation(
    session: AsyncSession, alloc: Allocation, ended: AllocationExit, now: datetime, detail: str
) -> None:
    row = (await session.execute(_TASK_WITH_RUN, {"task_id": alloc.task_id})).first()
    trial = row[1] if row is not None else None
    # Locked before the trial changes: its end may be a searcher decision (search.trial_ended).
    exp = await search.lock_experiment(session, trial.experiment_id) if trial else None
    alloc.exit_reason = ended.reason(detail)
    history.move_allocation(session, alloc, AllocationState.TERMINATED, now, alloc.exit_reason)
    if trial is None:
        mark_freed(session, alloc.resource_pool)  # a command never comes back to the queue
        # The task and its command are in the session already: no further reads.
        await commands.after_exit(session, alloc, ended, now)
        return
    assert exp is not None
    mark_reschedule(session, alloc.resource_pool)  # the trial may be queued again
    max_restarts = int(exp.config.get("max_restarts", DEFAULT_MAX_RESTARTS))
    outcome = trial_after_exit(
        RunState(trial.state), ended, restarts=trial.restarts, max_restarts=max_restarts
    )
    if outcome.count_restart:
        trial.restarts += 1
    if outcome.target is not None:
        history.move_trial(session, trial, outcome.target, now)
    else:
        history.note(session, "trial", str(trial.id), trial.state, outcome.reason, now)
    if RunState(trial.state).is_terminal:
        await search.trial_ended(session, trial, now, exp)
    else:
        await finish_experiment_if_done(session, exp, now)


finish_experiment_if_done = search.finish_if_done


_LEVELS = {
    "TRACE": "LOG_LEVEL_TRACE",
    "DEBUG": "LOG_LEVEL_DEBUG",
    "INFO": "LOG_LEVEL_INFO",
    "WARN": "LOG_LEVEL_WARNING",
    "WARNING": "LOG_LEVEL_WARNING",
    "ERROR": "LOG_LEVEL_ERROR",
    "CRITICAL": "LOG_LEVEL_CRITICAL",
    "FATAL": "LOG_LEVEL_CRITICAL",
}


def log_level(level: str) -> str:
    """The agent's level name ("ERROR", "LOG_LEVEL_ERROR") as a stored level; INFO if unknown."""
    name = level.upper().removeprefix("LOG_LEVEL_")
    return _LEVELS.get(name, "LOG_LEVEL_INFO")


async def _writer(
    session: AsyncSession, agent_id: str, container_id: str
) -> tuple[Principal, int] | None:
    """Who writes a container's lines (its allocation, on behalf of the task's owner) and the
    container's rank; None if the container is not one of this agent's."""
    allocation_id, rank = split_container_id(container_id)
    alloc = await session.get(Allocation, allocation_id)
    if alloc is None or agent_id not in (alloc.placement or {}):
        return None
    owner = await session.scalar(
        select(User).join(Task, Task.owner_id == User.id).where(Task.task_id == alloc.task_id)
    )
    if owner is None:
        return None
    return Principal(user=owner, token="", allocation=alloc), rank


def _time(timestamp: float, now: datetime) -> datetime:
    try:
        return datetime.fromtimestamp(timestamp, UTC)
    except (OverflowError, OSError, ValueError):
        return now


async def on_container_log(
    session: AsyncSession, agent_id: str, msg: ContainerLog, now: datetime
) -> bool:
    """Store what the agent says about a container ("image not found", ...) as a task log line
    of the container's task, written on the allocation's behalf. False if the container is not
    one of ours (the line is dropped)."""
    writer = await _writer(session, agent_id, msg.container_id)
    if writer is None:
        return False
    principal, rank = writer
    alloc = principal.allocation
    assert alloc is not None
    line = logs.LogLine(
        task_id=alloc.task_id,
        log=msg.message if msg.message.endswith("\n") else msg.message + "\n",
        timestamp=_time(msg.timestamp, now),
        allocation_id=alloc.allocation_id,
        agent_id=agent_id,
        container_id=msg.container_id,
        rank_id=rank,
        level=log_level(msg.level),
        stdtype=msg.stream,
        source="agent",
    )
    await logs.append(session, principal, [line], now)
    return True


async def on_container_output(
    session: AsyncSession, agent_id: str, msg: ContainerOutput, now: datetime
) -> int:
    """Store a batch of what a container that runs its command directly printed, as its task's
    logs (source ``task``, as the launcher's shipper stores them). The number stored; 0 if the
    container is not one of ours."""
    writer = await _writer(session, agent_id, msg.container_id)
    if writer is None:
        return 0
    principal, rank = writer
    alloc = principal.allocation
    assert alloc is not None
    lines = []
    for out in msg.lines:
        read = read_line(out.text)
        lines.append(
            logs.LogLine(
                task_id=alloc.task_id,
                log=read.text + "\n",
                timestamp=_time(out.timestamp, now),
                allocation_id=alloc.allocation_id,
                agent_id=agent_id,
                container_id=msg.container_id,
                rank_id=read.rank_id if read.rank_id is not None else rank,
                level=read.stored_level,
                stdtype=out.stream,
                source="task",
            )
        )
    return await logs.append(session, principal, lines, now)
