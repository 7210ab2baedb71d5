"""When task logs expire under `retention_policy.log_retention_days`."""

from __future__ import annotations

from datetime import datetime, timedelta


def log_retention_cutoff(now: datetime, retention_days: int | None) -> datetime | None:
    """Logs of tasks that ended before this instant are past `retention_days`; None keeps
    every log (no policy, or a negative count: Determined's -1 means forever)."""
    if retention_days is None or retention_days < 0:
        return None
    return now - timedelta(days=retention_days)
