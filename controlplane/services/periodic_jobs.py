"""The master's periodic jobs on APScheduler 3's asyncio scheduler: checkpoint GC (with its
retries, and the workspace and project deletions in progress) and task-log retention. Started
and stopped with the app (controlplane.app lifespan).

Each job takes its time from the injected clock and runs one short pass; a pass that fails is
logged and the next one tries again. `wake_gc` runs the GC job now (an experiment ended, a user
asked for a deletion) instead of waiting for the interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.session import transaction
from controlplane.services import checkpoint_gc, deletions
from controlplane.services.checkpoint_files import CheckpointDeleter, delete_checkpoint_files
from controlplane.services.log_retention import delete_expired_logs

log = logging.getLogger("controlplane.periodic")

GC_JOB = "checkpoint-gc"
RETENTION_JOB = "log-retention"


class PeriodicJobs:
    def __init__(
        self,
        factory: async_sessionmaker[AsyncSession],
        clock: Callable[[], datetime],
        *,
        default_storage: dict[str, Any],
        gc_interval_s: float,
        log_retention_days: int | None,
        retention_schedule: str,
        registered: checkpoint_gc.RegisteredProvider = checkpoint_gc.registered_in_models,
        deleter: CheckpointDeleter = delete_checkpoint_files,
    ) -> None:
        self._factory = factory
        self._clock = clock
        self._default_storage = default_storage
        self._gc_interval_s = gc_interval_s
        self.log_retention_days = log_retention_days
        self._retention_schedule = retention_schedule
        self._registered = registered
        self._deleter = deleter
        self._scheduler: AsyncIOScheduler | None = None

    async def start(self) -> None:
        scheduler = AsyncIOScheduler(timezone="UTC")
        # One run of a job at a time; a run missed while the previous one ran is merged into
        # the next (coalesce), never queued up.
        defaults = {"max_instances": 1, "coalesce": True, "misfire_grace_time": None}
        scheduler.add_job(
            self.run_gc,
            IntervalTrigger(seconds=self._gc_interval_s),
            id=GC_JOB,
            next_run_time=self._clock(),  # what a restart left undone goes at once
            **defaults,
        )
        if self.log_retention_days is not None and self.log_retention_days >= 0:
            scheduler.add_job(
                self.run_log_retention,
                CronTrigger.from_crontab(self._retention_schedule, timezone="UTC"),
                id=RETENTION_JOB,
                **defaults,
            )
        scheduler.start()
        self._scheduler = scheduler

    async def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None

    def wake_gc(self) -> None:
        """Run the GC job as soon as the event loop is free (no-op before start)."""
        scheduler = self._scheduler
        job = scheduler.get_job(GC_JOB) if scheduler is not None else None
        if job is not None:
            job.modify(next_run_time=self._clock() - timedelta(microseconds=1))
            scheduler.wakeup()  # type: ignore[union-attr]

    async def run_gc(self) -> checkpoint_gc.DeletionResults | None:
        try:
            results = await checkpoint_gc.gc_tick(
                self._factory,
                now=self._clock(),
                default_storage=self._default_storage,
                registered=self._registered,
                deleter=self._deleter,
            )
        except Exception:
            log.exception("checkpoint GC pass failed; the next one retries")
            results = None
        try:
            # Workspace and project deletions delete their checkpoints through the same path.
            await deletions.advance_deletions(
                self._factory,
                now=self._clock(),
                default_storage=self._default_storage,
                deleter=self._deleter,
            )
        except Exception:
            log.exception("workspace/project deletion pass failed; the next one retries")
        return results

    async def run_log_retention(self) -> int:
        try:
            return await self.cleanup_logs()
        except Exception:
            log.exception("task-log retention pass failed; the next one retries")
            return 0

    async def cleanup_logs(self) -> int:
        async with transaction(self._factory) as session:
            removed = await delete_expired_logs(
                session, now=self._clock(), retention_days=self.log_retention_days
            )
        if removed:
            log.info("log retention: removed %d task log lines", removed)
        return removed
