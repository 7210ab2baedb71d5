"""Experiment and trial state changes requested by users: pause, activate, cancel, kill,
archive, patch; and killing a single trial (Determined's KillTrial).

A trial with nothing running moves at once. A running one is asked to stop: pause and cancel set
its allocation's preemption signal (the harness checkpoints, acknowledges and exits; an
allocation that is not running yet is killed instead, `allocations.request_preemption`); kill
moves it to STOPPING_KILLED, for which the scheduling loop sends SIGKILL to its containers. The
trial reaches its final state when the allocation ends (`scheduling.agent_events`).
Determined 0.38 has no pause or activate for a single trial, so neither is offered here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Experiment, Job, Project, Trial, User
from controlplane.domain import config_policies as policy_rules
from controlplane.domain.errors import InvalidArgument, InvalidTransition, NotFound
from controlplane.domain.states import RunState
from controlplane.services import allocations, config_policies, history, jobs, search, trials
from controlplane.services.experiments import can_modify, get_experiment
from controlplane.services.reschedule import mark_reschedule

S = RunState
_STOP_TERMINAL = {S.STOPPING_CANCELED: S.CANCELED, S.STOPPING_KILLED: S.CANCELED}


async def _trials(session: AsyncSession, exp: Experiment) -> list[Trial]:
    return list(await session.scalars(select(Trial).where(Trial.experiment_id == exp.id)))


async def _live_allocation(session: AsyncSession, trial: Trial) -> str | None:
    return await session.scalar(
        select(Allocation.allocation_id)
        .where(Allocation.task_id == trial.task_id, Allocation.end_time.is_(None))
        .limit(1)
    )


async def pause(session: AsyncSession, user: User, experiment_id: int, now: datetime) -> None:
    exp = await get_experiment(session, experiment_id)
    can_modify(user, exp)
    if exp.state == S.PAUSED:
        return
    history.move_experiment(session, exp, S.PAUSED, now)
    for trial in await _trials(session, exp):
        if trial.state == S.ACTIVE:
            history.move_trial(session, trial, S.PAUSED, now)
            alloc = await _live_allocation(session, trial)
            if alloc is not None:
                await allocations.request_preemption(session, alloc, reason="paused", now=now)
    mark_reschedule(session, exp.resource_pool)


async def activate(session: AsyncSession, user: User, experiment_id: int, now: datetime) -> None:
    exp = await get_experiment(session, experiment_id)
    can_modify(user, exp)
    if exp.state == S.ACTIVE:
        return
    history.move_experiment(session, exp, S.ACTIVE, now)
    for trial in await _trials(session, exp):
        # A trial the searcher paused waits for the searcher's promotion, not the user's.
        if trial.state == S.PAUSED and not trial.paused_by_searcher:
            history.move_trial(session, trial, S.ACTIVE, now)
    mark_reschedule(session, exp.resource_pool)


async def stop(
    session: AsyncSession, user: User, experiment_id: int, now: datetime, *, kill: bool
) -> None:
    """Cancel (checkpoint first) or kill; idempotent on experiments that already ended."""
    exp = await get_experiment(session, experiment_id)
    can_modify(user, exp)
    current = S(exp.state)
    if current.is_terminal or current == S.STOPPING_KILLED:
        return
    if current == S.STOPPING_CANCELED and not kill:
        return
    stopping = S.STOPPING_KILLED if kill else S.STOPPING_CANCELED
    history.move_experiment(session, exp, stopping, now)
    still_running = False
    for trial in await _trials(session, exp):
        state = S(trial.state)
        if state.is_terminal or state == stopping:
            continue
        history.move_trial(session, trial, stopping, now)
        alloc = await _live_allocation(session, trial)
        if alloc is None:
            history.move_trial(session, trial, _STOP_TERMINAL[stopping], now)
            continue
        still_running = True
        if not kill:
            await allocations.request_preemption(session, alloc, reason="cancelled", now=now)
    if not still_running:
        history.move_experiment(session, exp, _STOP_TERMINAL[stopping], now)
    mark_reschedule(session, exp.resource_pool)


async def kill_trial(session: AsyncSession, user: User, trial_id: int, now: datetime) -> None:
    """Kill one trial (owner or admin); idempotent once it is killed or has ended.

    Running: STOPPING_KILLED, then SIGKILL from the pool loop, CANCELED when its container
    ends. Not running: CANCELED at once. The experiment ends when its last trial has.
    """
    trial = await trials.get_trial(session, trial_id)
    exp = await search.lock_experiment(session, trial.experiment_id)  # before any write
    if exp is None:
        raise NotFound(f"experiment {trial.experiment_id} not found")
    can_modify(user, exp)
    state = S(trial.state)
    if state.is_terminal or state == S.STOPPING_KILLED:
        return
    running = await _live_allocation(session, trial) is not None
    history.move_trial(session, trial, S.STOPPING_KILLED, now)
    if not running:
        history.move_trial(session, trial, S.CANCELED, now)
        await search.trial_ended(session, trial, now, exp)
    mark_reschedule(session, exp.resource_pool)


async def set_archived(
    session: AsyncSession, user: User, experiment_id: int, archived: bool
) -> None:
    exp = await get_experiment(session, experiment_id)
    can_modify(user, exp)
    if archived and not S(exp.state).is_terminal:
        raise InvalidTransition(
            f"experiment {exp.id} is {S(exp.state).wire}; only ended experiments can be archived"
        )
    exp.archived = archived


@dataclass(frozen=True)
class ExperimentPatch:
    name: str | None = None
    description: str | None = None
    notes: str | None = None
    labels: list[str] | None = None
    priority: int | None = None
    weight: float | None = None
    max_slots: int | None = None


def _check_resources(p: ExperimentPatch) -> None:
    if p.priority is not None and not 1 <= p.priority <= 99:
        raise InvalidArgument(f"priority must be between 1 and 99 (got {p.priority})")
    if p.weight is not None and not p.weight > 0:
        raise InvalidArgument(f"weight must be greater than 0 (got {p.weight})")
    if p.max_slots is not None and p.max_slots < 0:
        raise InvalidArgument(f"max_slots must be 0 or more (got {p.max_slots})")


async def patch(
    session: AsyncSession, user: User, experiment_id: int, p: ExperimentPatch
) -> Experiment:
    exp = await get_experiment(session, experiment_id)
    can_modify(user, exp)
    _check_resources(p)
    if p.name is not None:
        if not p.name.strip():
            raise InvalidArgument("experiment name must not be empty")
        exp.name = p.name
    if p.description is not None:
        exp.description = p.description
    if p.notes is not None:
        exp.notes = p.notes
    if p.labels is not None:
        exp.labels = list(dict.fromkeys(p.labels))
    config: dict[str, Any] = dict(exp.config)
    resources = dict(config.get("resources") or {})
    for key, value in (("priority", p.priority), ("weight", p.weight), ("max_slots", p.max_slots)):
        if value is not None:
            resources[key] = value
    config["resources"] = resources
    for key, value in (("name", p.name), ("description", p.description), ("labels", p.labels)):
        if value is not None:
            config[key] = value
    # `det e set priority|max-slots` keeps within the config policies, as a submission does.
    workspace_id = await session.scalar(
        select(Project.workspace_id).where(Project.id == exp.project_id)
    )
    if workspace_id is not None:
        policy = await config_policies.effective(session, workspace_id, "EXPERIMENT")
        policy_rules.check(config, policy)
    exp.config = config
    job = await session.get(Job, exp.job_id)
    if job is not None:
        if p.priority is not None:
            job.priority = p.priority
            job.queue_position = jobs.initial_position(job.submitted_at)
        if p.weight is not None:
            job.weight = p.weight
        if p.max_slots is not None:
            job.max_slots = p.max_slots
        if p.name is not None:
            job.name = p.name
        mark_reschedule(session, job.resource_pool)
    return exp
