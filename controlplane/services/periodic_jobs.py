"""The master's periodic jobs on APScheduler 3's asyncio scheduler: checkpoint GC (with its
retries, and the workspace and project deletions in progress), task-log retention and the end
of detached runs whose heartbeats stopped. Started
and stopped with the app (controlplane.app lifespan).

Each job takes its time from the injected clock and runs one short pass; a pass that fails is
logged and the next one tries again. `wake_gc` runs the GC job now (an experiment ended, a user
asked for a deletion) instead of waiting for the interval.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.session import transaction
from controlplane.services import checkpoint_gc, deletions, experiment_deletion, unmanaged
from controlplane.services.checkpoint_files import CheckpointDeleter, delete_checkpoint_files
from controlplane.services.db_outage import outage_watch, report_pass_failure
from controlplane.services.log_retention import delete_expired_logs

log = logging.getLogger("controlplane.periodic")

GC_JOB = "checkpoint-gc"
RETENTION_JOB = "log-retention"
# Detached runs whose heartbeats stopped end in ERROR (services/unmanaged.py).
LOST_TRIALS_JOB = "lost-detached-trials"
LOST_TRIALS_INTERVAL_S = 60.0
# How long stop() lets a pass in flight finish before cancelling it.
STOP_GRACE_S = 5.0


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
        self._running: set[asyncio.Task[Any]] = set()

    def _tracked(self, job: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
        """The job as APScheduler runs it, its task remembered so that stop() can wait for it:
        APScheduler's shutdown does not wait for asyncio jobs, and a pass left running past the
        app's shutdown had its database call cancelled while the engine and the event loop were
        being torn down (the SQLite connection's close then hung the loop's exit)."""

        async def run() -> Any:
            task = asyncio.current_task()
            if task is not None:
                self._running.add(task)
            try:
                return await job()
            finally:
                self._running.discard(task)  # type: ignore[arg-type]

        return run

    async def start(self) -> None:
        scheduler = AsyncIOScheduler(timezone="UTC")
        # One run of a job at a time; a run missed while the previous one ran is merged into
        # the next (coalesce), never queued up.
        defaults = {"max_instances": 1, "coalesce": True, "misfire_grace_time": None}
        scheduler.add_job(
            self._tracked(self.run_gc),
            IntervalTrigger(seconds=self._gc_interval_s),
            id=GC_JOB,
            next_run_time=self._clock(),  # what a restart left undone goes at once
            **defaults,
        )
        scheduler.add_job(
            self._tracked(self.run_lost_trials),
            IntervalTrigger(seconds=LOST_TRIALS_INTERVAL_S),
            id=LOST_TRIALS_JOB,
            **defaults,
        )
        # Always: a trial's own retention (`det t set log-retention`) applies even where the
        # master keeps logs forever.
        scheduler.add_job(
            self._tracked(self.run_log_retention),
            CronTrigger.from_crontab(self._retention_schedule, timezone="UTC"),
            id=RETENTION_JOB,
            **defaults,
        )
        scheduler.start()
        self._scheduler = scheduler

    async def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """No new pass starts; a pass in flight finishes (or is cancelled after `grace_s` and its
        cancellation awaited) before this returns, so the caller may then close the database.
        APScheduler's own shutdown would cancel it and return at once, which is what left a
        cancelled database call running into the engine's disposal."""
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None:
            scheduler.pause()
        running = set(self._running)
        if running:
            _, late = await asyncio.wait(running, timeout=grace_s)
            for task in late:
                log.warning(
                    "a periodic job still ran %.0f s after shutdown began: cancelled", grace_s
                )
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        if scheduler is not None:
            scheduler.shutdown(wait=False)

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
        except Exception as exc:
            report_pass_failure(log, "checkpoint GC pass", exc, outage_watch(self._factory))
            results = None
        try:
            # Workspace and project deletions delete their checkpoints through the same path.
            await deletions.advance_deletions(
                self._factory,
                now=self._clock(),
                default_storage=self._default_storage,
                deleter=self._deleter,
            )
            # Experiments deleted one at a time (DELETE /api/v1/experiments/{id}), likewise.
            await experiment_deletion.advance_experiment_deletions(
                self._factory,
                now=self._clock(),
                default_storage=self._default_storage,
                deleter=self._deleter,
            )
        except Exception as exc:
            watch = outage_watch(self._factory)
            report_pass_failure(log, "workspace/project deletion pass", exc, watch)
        return results

    async def run_lost_trials(self) -> list[int]:
        try:
            async with transaction(self._factory) as session:
                lost = await unmanaged.mark_lost_trials(session, self._clock())
        except Exception as exc:
            report_pass_failure(log, "lost detached trials pass", exc, outage_watch(self._factory))
            return []
        if lost:
            log.info("detached trials lost (no heartbeat): %s", ", ".join(map(str, lost)))
        return lost

    async def run_log_retention(self) -> int:
        try:
            return await self.cleanup_logs()
        except Exception as exc:
            report_pass_failure(log, "task-log retention pass", exc, outage_watch(self._factory))
            return 0

    async def cleanup_logs(self) -> int:
        async with transaction(self._factory) as session:
            removed = await delete_expired_logs(
                session, now=self._clock(), retention_days=self.log_retention_days
            )
        if removed:
            log.info("log retention: removed %d task log lines", removed)
        return removed
