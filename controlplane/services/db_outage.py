"""What the master logs while its database is away: one line when it goes, one when it is back.

`DbOutageWatch` is the master's one view of its database (one per engine, so one per master
process). Everything that meets an outage reports it here: the API's error handlers, the agents'
socket and the periodic loops; the watch logs the first report of an outage in one line and
stays quiet until a statement runs again (an engine event tells it), when it logs one line with
the outage's length. `controlplane.domain.db_health` decides which line is due.

`LoopDbHealth` is one loop's view: it keeps the loop quiet during an outage (errors that are its
symptoms included) and still logs a pass that fails for another reason with its traceback.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from controlplane.domain.db_health import DbHealth, DbState, Note, Outcome, observe
from controlplane.services.db_unavailable import (
    Unavailability,
    classify,
    describe,
    is_database_unavailable,
)

__all__ = [
    "DbOutageWatch",
    "LoopDbHealth",
    "is_database_unavailable",
    "outage_watch",
    "report_pass_failure",
]

log = logging.getLogger("controlplane.database")


def _utc_now() -> datetime:
    return datetime.now(UTC)


class DbOutageWatch:
    """The master's database as all of its parts see it; logs one line per change of state."""

    def __init__(
        self, logger: logging.Logger = log, clock: Callable[[], datetime] = _utc_now
    ) -> None:
        self.log = logger
        self.clock = clock
        self.health = DbHealth()
        self.reports = 0  # outage reports since the last change, for the "back" line
        # Statements run in SQLAlchemy's greenlets and in threads (SQLite's driver): one lock.
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        return self.health.state is DbState.DOWN

    def unavailable(self, exc: BaseException, kind: Unavailability, where: str) -> None:
        """`where` (e.g. "API requests") could not use the database because of `exc`."""
        with self._lock:
            self.health, note = observe(self.health, Outcome.DB_UNAVAILABLE, self.clock())
            self.reports += 1
        if note is Note.WENT_DOWN:
            self.log.warning(
                "the database is unavailable (%s; first noticed by %s): requests are answered "
                "503 with Retry-After and the loops retry quietly until it is back",
                describe(exc, kind),
                where,
            )

    def reachable(self) -> None:
        """A statement ran: the database answers. Cheap when it was up (every statement)."""
        if self.health.state is DbState.UP:
            return
        with self._lock:
            before, now = self.health, self.clock()
            self.health, note = observe(before, Outcome.OK, now)
            reports, self.reports = self.reports, 0
        if note is Note.CAME_BACK:
            self.log.info(
                "the database is back after %.1f s (%d failed requests and passes meanwhile)",
                before.downtime(now).total_seconds(),
                reports,
            )

    def attach(self, engine: Engine) -> None:
        """Hear of every statement that ran on `engine` (that is how the watch sees recovery)."""
        event.listen(engine, "after_cursor_execute", self._after_execute)

    def _after_execute(self, *_: Any) -> None:
        self.reachable()


_WATCHES: weakref.WeakKeyDictionary[Engine, DbOutageWatch] = weakref.WeakKeyDictionary()
_WATCHES_LOCK = threading.Lock()


def outage_watch(source: async_sessionmaker[AsyncSession] | AsyncEngine) -> DbOutageWatch:
    """The watch of the engine behind `source`, made and attached on first use: every part of
    the master that shares an engine (the app's) shares its watch, so an outage is one line."""
    engine = source if isinstance(source, AsyncEngine) else source.kw.get("bind")
    if not isinstance(engine, AsyncEngine):
        return DbOutageWatch()  # a session factory without an engine (tests): a watch of its own
    sync = engine.sync_engine
    with _WATCHES_LOCK:
        watch = _WATCHES.get(sync)
        if watch is None:
            watch = _WATCHES[sync] = DbOutageWatch()
            watch.attach(sync)
    return watch


def _reason(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


class LoopDbHealth:
    """One loop's view of the database; tell it how each pass ended, it logs what is due.

    With a `watch`, an outage is told to the watch (one line for the whole master) instead of
    in lines of this loop's own."""

    def __init__(
        self,
        log: logging.Logger,
        what: str,
        clock: Callable[[], datetime],
        watch: DbOutageWatch | None = None,
    ) -> None:
        self.log = log
        self.what = what  # e.g. "scheduling pass for pool default"
        self.clock = clock
        self.watch = watch
        self.health = DbHealth()

    def succeeded(self) -> None:
        self._observe(Outcome.OK, None, None)

    def failed(self, exc: BaseException) -> None:
        kind = classify(exc)
        outcome = Outcome.OTHER_ERROR if kind is None else Outcome.DB_UNAVAILABLE
        self._observe(outcome, exc, kind)

    def _observe(
        self, outcome: Outcome, exc: BaseException | None, kind: Unavailability | None
    ) -> None:
        now = self.clock()
        before = self.health
        self.health, note = observe(before, outcome, now)
        if self.watch is not None and exc is not None and kind is not None:
            self.watch.unavailable(exc, kind, self.what)
        if note is Note.FAILED and exc is not None:
            self.log.error("%s failed", self.what, exc_info=exc)
        elif self.watch is not None:
            return  # the watch says when the database goes and comes back
        elif note is Note.WENT_DOWN and exc is not None:
            self.log.warning(
                "%s: the database is unavailable (%s); retrying quietly until it is back",
                self.what,
                _reason(exc),
            )
        elif note is Note.CAME_BACK:
            self.log.info(
                "%s: the database is back after %d failed passes in %.1f s",
                self.what,
                before.failures,
                before.downtime(now).total_seconds(),
            )


def report_pass_failure(
    logger: logging.Logger, what: str, exc: BaseException, watch: DbOutageWatch
) -> None:
    """A periodic job's pass (`what`) failed: an outage goes to the watch (one line for the
    master), anything else is logged with its traceback."""
    kind = classify(exc)
    if kind is None:
        logger.error("%s failed; the next one retries", what, exc_info=exc)
    else:
        watch.unavailable(exc, kind, what)
