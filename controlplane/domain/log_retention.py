"""When task logs expire under `retention_policy.log_retention_days`."""

from __future__ import annotations

from datetime import datetime, timedelta


def log_retention_cutoff(now: datetime, retention_days: int | None) -> datetime | None:
    """Logs of tasks that ended before this instant are past `retention_days`; None keeps
    every log (no policy, or a negative count: Determined's -1 means forever)."""
    if retention_days is None or retention_days < 0:
        return None
    return now - timedelta(days=retention_days)


FOREVER = -1
MAX_DAYS = 32767  # Determined's bound (a protobuf int32 it stores as SMALLINT)


def check_days(days: int) -> int:
    """A retention a user sets on a trial or experiment: -1 (forever) or 0..MAX_DAYS."""
    if days < FOREVER or days > MAX_DAYS:
        raise ValueError(f"the days to keep logs must be between -1 and {MAX_DAYS}")
    return days


def effective_days(task_days: int | None, global_days: int | None) -> int | None:
    """The days a task's logs are kept: its own setting, else the master's policy; None or a
    negative count keeps them forever."""
    days = task_days if task_days is not None else global_days
    return None if days is None or days < 0 else days


def remaining_days(
    end_time: datetime | None, now: datetime, task_days: int | None, global_days: int | None
) -> int:
    """Whole days until a task's logs go (Determined's remainingDays): -1 forever; the full
    count while the task runs; 0 once they are due."""
    days = effective_days(task_days, global_days)
    if days is None:
        return FOREVER
    if end_time is None:
        return days
    left = end_time + timedelta(days=days) - now
    if left <= timedelta(0):
        return 0
    return left.days + (1 if left - timedelta(days=left.days) > timedelta(0) else 0)
