"""What the provisioner does to work that waits in its pool: tell it, move it, or fail it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Experiment, Job, Task, TaskLog, Trial
from controlplane.domain.states import RunState
from controlplane.services import history
from controlplane.services.reschedule import mark_reschedule
from controlplane.services.scheduling.agent_events import finish_experiment_if_done

SOURCE = "provisioner"


async def tell_waiting(
    session: AsyncSession, task_ids: Sequence[str], message: str, now: datetime
) -> None:
    """One line in each waiting task's log (`det trial logs` shows why it waits)."""
    if not task_ids:
        return
    rows = [
        {
            "task_id": task_id,
            "timestamp": now,
            "level": "LOG_LEVEL_WARNING",
            "source": SOURCE,
            "log": f"[provisioner] {message}\n",
        }
        for task_id in task_ids
    ]
    await session.execute(insert(TaskLog), rows)


async def move_to_pool(
    session: AsyncSession,
    pool: str,
    target: str,
    task_ids: Sequence[str],
    why: str,
    now: datetime,
) -> list[str]:
    """Hand the jobs of these waiting tasks to `target`; returns the moved job ids.

    Work already running in `pool` keeps running there; the job's later allocations go to
    `target`.
    """
    jobs = sorted(
        {
            job_id
            for job_id in await session.scalars(
                select(Task.job_id).where(Task.task_id.in_(task_ids), Task.job_id.is_not(None))
            )
            if job_id is not None
        }
    )
    if not jobs:
        return []
    await session.execute(
        update(Job)
        .where(Job.job_id.in_(jobs), Job.resource_pool == pool)
        .values(resource_pool=target)
    )
    await tell_waiting(
        session,
        task_ids,
        f"pool {pool!r} cannot get capacity ({why}): moved to pool {target!r}",
        now,
    )
    mark_reschedule(session, pool)
    mark_reschedule(session, target)
    return jobs


async def fail_unschedulable(
    session: AsyncSession, pool: str, task_ids: Sequence[str], now: datetime
) -> None:
    """Reference §2.4: while launches keep failing, trials asking for more slots than the
    listed instances can give are unrecoverable (InvalidResourcesRequestError) and end in
    ERROR. Commands are told why they wait."""
    message = (
        f"pool {pool!r} keeps failing to launch instances and its listed instances can never "
        "hold this task's slots: InvalidResourcesRequestError"
    )
    await tell_waiting(session, task_ids, message, now)
    trials = list(
        await session.scalars(
            select(Trial).where(Trial.task_id.in_(task_ids), Trial.state == RunState.ACTIVE.value)
        )
    )
    experiments: dict[int, Experiment] = {}
    for trial in trials:
        history.move_trial(session, trial, RunState.ERROR, now)
        exp = experiments.get(trial.experiment_id)
        if exp is None:
            exp = await session.get(Experiment, trial.experiment_id)
            if exp is not None:
                experiments[trial.experiment_id] = exp
    await session.flush()
    for exp in experiments.values():
        await finish_experiment_if_done(session, exp, now)
    mark_reschedule(session, pool)
