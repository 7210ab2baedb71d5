"""What the master does with an agent's reports: container states, and the end of allocations."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import ContainerState, ContainerStateChanged, SignalContainer
from controlplane.db.models import Allocation, Experiment, Trial
from controlplane.domain.states import ALLOCATION_ORDER, AllocationState, RunState
from controlplane.domain.trial_exit import (
    AllocationExit,
    experiment_after_trials,
    trial_after_exit,
)
from controlplane.services import history
from controlplane.services.scheduling import mark_reschedule
from controlplane.services.scheduling.apply import container_id

log = logging.getLogger("controlplane.agents")

DEFAULT_MAX_RESTARTS = 5


@dataclass
class Effects:
    """Messages to send once the transaction commits."""

    signals: list[tuple[str, SignalContainer]] = field(default_factory=list)


def allocation_of(msg: ContainerStateChanged) -> str:
    if msg.allocation_id:
        return msg.allocation_id
    head, _, rank = msg.container.id.rpartition("-")
    return head if rank.isdigit() else msg.container.id


async def on_container_state(
    session: AsyncSession, agent_id: str, msg: ContainerStateChanged, now: datetime
) -> Effects:
    effects = Effects()
    alloc = await session.get(Allocation, allocation_of(msg))
    if alloc is None or agent_id not in alloc.placement:
        # Not ours (or no longer): the agent must not keep running it.
        log.warning("agent %s reported unknown container %s", agent_id, msg.container.id)
        if msg.container.state is not ContainerState.TERMINATED:
            effects.signals.append((agent_id, SignalContainer(container_id=msg.container.id)))
        return effects
    if alloc.end_time is not None:
        return effects
    target = AllocationState(msg.container.state.value)
    current = AllocationState(alloc.state)
    if target is AllocationState.TERMINATED:
        ended = AllocationExit(
            exit_code=msg.exit_code,
            failure=msg.failure.type.value if msg.failure else None,
            preempt_requested=alloc.preempt_requested,
        )
        detail = msg.failure.message if msg.failure and msg.failure.message else ""
        await close_allocation(session, alloc, ended, now, detail=detail)
        # One container's end ends the allocation: its other containers are killed.
        for rank, other in enumerate(sorted(alloc.placement)):
            cid = container_id(alloc.allocation_id, rank)
            if cid != msg.container.id:
                effects.signals.append((other, SignalContainer(container_id=cid)))
    elif ALLOCATION_ORDER[target] > ALLOCATION_ORDER[current]:
        history.move_allocation(session, alloc, target, now)
    return effects


async def close_allocation(
    session: AsyncSession,
    alloc: Allocation,
    ended: AllocationExit,
    now: datetime,
    *,
    detail: str = "",
) -> None:
    """End the allocation, free its slots, and move its trial (and experiment) on."""
    if ended.failure:
        reason = ended.failure
    elif ended.exit_code is not None:
        reason = f"exit code {ended.exit_code}"
    else:
        reason = "ended"
    alloc.exit_reason = f"{reason}: {detail}" if detail else reason
    history.move_allocation(session, alloc, AllocationState.TERMINATED, now, alloc.exit_reason)
    mark_reschedule(session, alloc.resource_pool)
    trial = await session.scalar(select(Trial).where(Trial.task_id == alloc.task_id))
    if trial is None:
        return
    exp = await session.get(Experiment, trial.experiment_id)
    assert exp is not None
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
    await finish_experiment_if_done(session, exp, now)


async def finish_experiment_if_done(session: AsyncSession, exp: Experiment, now: datetime) -> None:
    states = [
        RunState(s)
        for s in await session.scalars(select(Trial.state).where(Trial.experiment_id == exp.id))
    ]
    target = experiment_after_trials(RunState(exp.state), states)
    if target is not None:
        history.move_experiment(session, exp, target, now)
