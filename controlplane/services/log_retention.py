"""Task-log retention: logs of tasks that ended more than `log_retention_days` ago go."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Task, TaskLog, Trial
from controlplane.domain.log_retention import log_retention_cutoff


async def delete_expired_logs(
    session: AsyncSession, *, now: datetime, retention_days: int | None
) -> int:
    """Delete the logs of tasks that ended before the cutoff; running tasks keep theirs."""
    cutoff = log_retention_cutoff(now, retention_days)
    if cutoff is None:
        return 0
    # A trial's task row is not closed when the trial ends; the trial's end time says when.
    ended_tasks = select(Task.task_id).where(Task.end_time < cutoff)
    ended_trials = select(Trial.task_id).where(Trial.end_time < cutoff)
    removed = 0
    for ended in (ended_tasks, ended_trials):
        result = await session.execute(
            delete(TaskLog)
            .where(TaskLog.task_id.in_(ended))
            .execution_options(synchronize_session=False)
        )
        removed += int(result.rowcount or 0)  # type: ignore[attr-defined]
    return removed
