"""Task-log retention: logs of tasks that ended more than their retention's days ago go.

A task's retention is its own (`det e|t set log-retention`, tasks.log_retention_days) or the
master's `retention_policy.log_retention_days`; -1 keeps them forever."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Task, TaskLog, Trial
from controlplane.domain.log_retention import effective_days, log_retention_cutoff

_CHUNK = 500


async def delete_expired_logs(
    session: AsyncSession, *, now: datetime, retention_days: int | None
) -> int:
    """Delete the logs of tasks that ended before their cutoff; running tasks keep theirs."""
    removed = 0
    cutoff = log_retention_cutoff(now, retention_days)
    if cutoff is not None:
        # A trial's task row is not closed when the trial ends; the trial's end time says when.
        own = Task.log_retention_days.is_(None)
        ended_tasks = select(Task.task_id).where(own, Task.end_time < cutoff)
        ended_trials = (
            select(Trial.task_id)
            .join(Task, Task.task_id == Trial.task_id)
            .where(own, Trial.end_time < cutoff)
        )
        for ended in (ended_tasks, ended_trials):
            removed += await _delete_logs(session, ended)
    # Tasks with a retention of their own: few (a user set each), decided one by one.
    rows = await session.execute(
        select(Task.task_id, Task.end_time, Trial.end_time, Task.log_retention_days)
        .outerjoin(Trial, Trial.task_id == Task.task_id)
        .where(Task.log_retention_days >= 0)
    )
    due = []
    for task_id, task_end, trial_end, days in rows:
        end = trial_end or task_end
        keep = effective_days(days, retention_days)
        if end is not None and keep is not None and end < now - timedelta(days=keep):
            due.append(task_id)
    for i in range(0, len(due), _CHUNK):
        removed += await _delete_logs(session, due[i : i + _CHUNK])
    return removed


async def _delete_logs(session: AsyncSession, task_ids: object) -> int:
    result = await session.execute(
        delete(TaskLog)
        .where(TaskLog.task_id.in_(task_ids))  # type: ignore[arg-type]
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def set_retention(session: AsyncSession, task_ids: Sequence[str], days: int) -> None:
    """Keep these tasks' logs `days` after they end (-1: forever)."""
    for i in range(0, len(task_ids), _CHUNK):
        await session.execute(
            update(Task)
            .where(Task.task_id.in_(task_ids[i : i + _CHUNK]))
            .values(log_retention_days=days)
            .execution_options(synchronize_session=False)
        )


async def trial_task_ids(session: AsyncSession, experiment_ids: Sequence[int]) -> list[str]:
    return list(
        await session.scalars(select(Trial.task_id).where(Trial.experiment_id.in_(experiment_ids)))
    )
