"""Detached (unmanaged) runs: `det.experimental.core_v2.init(...)` off the cluster.

The run creates (or finds, by its external ids) an unmanaged experiment and a trial in it, starts
the trial (a new run id, where it left off), reports metrics, checkpoints and logs with its
user's session, and reports its own state (PATCH /api/v1/trials/{id}). The master schedules
nothing for it: its trials' tasks have no job, so no pool ever queues them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import (
    Checkpoint,
    Experiment,
    StateChange,
    Task,
    Trial,
    TrialHparam,
    User,
)
from controlplane.domain.errors import Conflict, NotFound, PermissionDenied
from controlplane.domain.hparam_values import flatten_hparams
from controlplane.domain.states import RunState
from controlplane.domain.unmanaged import (
    LOST_AFTER,
    LOST_REASON,
    UNMANAGED_EXPERIMENT_TRANSITIONS,
    check_external_id,
    check_unmanaged_trial_move,
    experiment_state,
    is_lost,
)
from controlplane.services import experiments, history
from controlplane.services.principals import Principal, can_write_trial

# A task id is "{experiment id}.{external trial id}" as in Determined, when that fits its column.
MAX_TASK_ID = 128


async def _check_owner(session: AsyncSession, user: User, exp: Experiment) -> None:
    if not (user.admin or user.id == exp.owner_id):
        raise PermissionDenied(f"only the owner of experiment {exp.id} or an admin may change it")


async def put_experiment(
    session: AsyncSession,
    owner: User,
    req: experiments.NewExperiment,
    external_id: str,
    defaults: experiments.ExperimentDefaults,
    *,
    now: datetime,
) -> experiments.Created:
    """The unmanaged experiment named `external_id`: found, or created from `req`."""
    check_external_id(external_id, "externalExperimentId")
    found = await session.scalar(
        select(Experiment).where(Experiment.external_experiment_id == external_id)
    )
    if found is not None:
        await _check_owner(session, owner, found)
        if not found.unmanaged:
            raise Conflict(f"experiment {found.id} is not unmanaged")
        return experiments.Created(experiment=found, config=found.config)
    created = await experiments.create_experiment(session, owner, req, defaults, now=now)
    if created.experiment is not None:
        created.experiment.external_experiment_id = external_id
    return created


def _task_id(exp_id: int, external_trial_id: str | None) -> str:
    suffix = external_trial_id or uuid.uuid4().hex
    task_id = f"{exp_id}.{suffix}"
    return task_id if len(task_id) <= MAX_TASK_ID else f"{exp_id}.{uuid.uuid4().hex}"


async def create_trial(
    session: AsyncSession,
    user: User,
    experiment_id: int,
    hparams: dict[str, Any] | None,
    external_trial_id: str | None,
    now: datetime,
) -> Trial:
    """A trial of an unmanaged experiment (PAUSED until its run reports RUNNING); with an
    external id, the trial already named so is returned instead (Determined's upsert)."""
    if external_trial_id is not None:
        check_external_id(external_trial_id, "externalTrialId")
    exp = await session.get(Experiment, experiment_id)
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    await _check_owner(session, user, exp)
    if not exp.unmanaged:
        raise Conflict("trials can only be created on unmanaged experiments")
    if external_trial_id is not None:
        found = await session.scalar(
            select(Trial).where(
                Trial.experiment_id == exp.id, Trial.external_trial_id == external_trial_id
            )
        )
        if found is not None:
            return found
    task_id = _task_id(exp.id, external_trial_id)
    # No job: no pool ever queues it (the scheduler reads trials through their task's job).
    session.add(
        Task(task_id=task_id, task_type="TRIAL", job_id=None, slots=0, single_node=False,
             owner_id=exp.owner_id, start_time=now)
    )  # fmt: skip
    await session.flush()
    trial = Trial(
        experiment_id=exp.id,
        task_id=task_id,
        request_id=uuid.uuid4().hex,
        state=RunState.PAUSED.value,
        hparams=hparams or {},
        seed=0,
        start_time=now,
        external_trial_id=external_trial_id,
    )
    session.add(trial)
    await session.flush()
    session.add_all(
        TrialHparam(trial_id=trial.id, experiment_id=exp.id, name=v.name, number=v.number,
                    text=v.text)
        for v in flatten_hparams(trial.hparams)
    )  # fmt: skip
    history.record_created(session, "trial", str(trial.id), RunState.PAUSED, now)
    return trial


async def trial_by_external_ids(
    session: AsyncSession, external_experiment_id: str, external_trial_id: str
) -> tuple[Trial, Experiment]:
    """The trial a detached run names (Determined's GetTrialByExternalID)."""
    row = (
        await session.execute(
            select(Trial, Experiment)
            .join(Experiment, Experiment.id == Trial.experiment_id)
            .where(
                Experiment.external_experiment_id == external_experiment_id,
                Trial.external_trial_id == external_trial_id,
            )
        )
    ).first()
    if row is None:
        raise NotFound(f"no trial {external_trial_id!r} in experiment {external_experiment_id!r}")
    return row[0], row[1]


@dataclass(frozen=True)
class Started:
    """v1StartTrialResponse."""

    trial_run_id: int
    steps_completed: int
    latest_checkpoint: str | None


async def _unmanaged_trial(session: AsyncSession, trial_id: int) -> tuple[Trial, Experiment]:
    row = (
        await session.execute(
            select(Trial, Experiment)
            .join(Experiment, Experiment.id == Trial.experiment_id)
            .where(Trial.id == trial_id)
        )
    ).first()
    if row is None:
        raise NotFound(f"trial {trial_id} not found")
    trial, exp = row
    if not exp.unmanaged:
        raise Conflict("only unmanaged trials are supported")
    return trial, exp


async def start_trial(
    session: AsyncSession, principal: Principal, trial_id: int, resume: bool, now: datetime
) -> Started:
    """A new run of the trial: its run id counts on, and (resuming) it starts from its steps so
    far and its latest completed checkpoint."""
    trial, exp = await _unmanaged_trial(session, trial_id)
    can_write_trial(principal, trial, exp.owner_id)
    trial.run_id += 1
    trial.last_activity = now
    if not resume:
        return Started(trial.run_id, 0, None)
    latest = await session.scalar(
        select(Checkpoint.uuid)
        .where(Checkpoint.trial_id == trial.id, Checkpoint.state == "COMPLETED")
        .order_by(Checkpoint.steps_completed.desc(), Checkpoint.report_time.desc())
        .limit(1)
    )
    return Started(trial.run_id, trial.total_batches, latest)


async def patch_trial(
    session: AsyncSession,
    principal: Principal,
    trial_id: int,
    state: RunState | None,
    now: datetime,
) -> Trial:
    """A detached run's heartbeat (no state) or its own state; the experiment follows its most
    progressed trial."""
    trial, exp = await _unmanaged_trial(session, trial_id)
    can_write_trial(principal, trial, exp.owner_id)
    trial.last_activity = now
    if state is not None:
        await _move_trial(session, exp, trial, state, now, now)
    return trial


async def _move_trial(
    session: AsyncSession,
    exp: Experiment,
    trial: Trial,
    state: RunState,
    now: datetime,
    ended_at: datetime,
    why: str | None = None,
) -> None:
    current = RunState(trial.state)
    edge = check_unmanaged_trial_move(current, state, f"trial {trial.id}")
    if edge is None:
        return
    trial.state = state.value
    trial.end_time = ended_at if state.is_terminal else None
    _record(session, "trial", str(trial.id), current, state, why or edge, now)
    await _follow_trials(session, exp, now)


async def mark_lost_trials(session: AsyncSession, now: datetime) -> list[int]:
    """End in ERROR every running detached trial whose run went silent (domain.is_lost); its
    end time is its last heartbeat. Returns their ids."""
    rows = await session.execute(
        select(Trial, Experiment)
        .join(Experiment, Experiment.id == Trial.experiment_id)
        .where(
            Experiment.unmanaged.is_(True),
            Trial.state == RunState.ACTIVE.value,
            Trial.last_activity < now - LOST_AFTER,
        )
        .order_by(Trial.id)
    )
    lost = []
    for trial, exp in rows.all():
        if is_lost(RunState(trial.state), trial.last_activity, now):
            assert trial.last_activity is not None
            await _move_trial(session, exp, trial, RunState.ERROR, now, trial.last_activity,
                              LOST_REASON)  # fmt: skip
            lost.append(trial.id)
    return lost


async def _follow_trials(session: AsyncSession, exp: Experiment, now: datetime) -> None:
    rows = await session.execute(
        select(Trial.state, Trial.end_time).where(Trial.experiment_id == exp.id)
    )
    found = rows.all()
    target = experiment_state(RunState(s) for s, _ in found)
    current = RunState(exp.state)
    if target is None or target is current:
        return
    why = UNMANAGED_EXPERIMENT_TRANSITIONS.get((current, target))
    if why is None:  # e.g. a DELETED one: left as it is
        return
    exp.state = target.value
    ends = [end for _, end in found if end is not None]
    exp.end_time = (max(ends) if ends else now) if target.is_terminal else None
    _record(session, "experiment", str(exp.id), current, target, why, now)


def _record(
    session: AsyncSession,
    entity: str,
    entity_id: str,
    old: RunState,
    new: RunState,
    why: str,
    now: datetime,
) -> None:
    session.add(
        StateChange(**history.change_row(entity, entity_id, old.value, new.value, why, now))
    )
