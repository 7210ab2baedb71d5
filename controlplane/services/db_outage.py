"""What a periodic loop logs when its pass fails: one line when the database goes away, one when
it is back (`controlplane.domain.db_health` decides), a full traceback for anything else."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from controlplane.domain.db_health import DbHealth, Note, Outcome, observe

# SQLSTATE classes of an unreachable server: 08 connection exception, 57P0x operator
# intervention (admin shutdown, crash shutdown, cannot connect now: the server is starting).
_UNREACHABLE_STATES = ("08", "57P01", "57P02", "57P03")
_UNREACHABLE_WORDS = (
    "connection",
    "could not connect",
    "database is locked",
    "unable to open database file",
    "server closed",
)


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc`, what it wraps (a DBAPIError's `orig`) and what caused it, without loops."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or any(item is s for s in seen) or len(seen) > 20:
            continue
        seen.append(item)
        todo += [getattr(item, "orig", None), item.__cause__, item.__context__]
    return seen


_DB_MODULES = ("sqlalchemy", "asyncpg", "aiosqlite", "sqlite3")


def _raised_by_database_code(exc: BaseException) -> bool:
    """Whether `exc` was raised from a database driver or SQLAlchemy (a bare OSError from
    asyncpg's connect, say), rather than from a cloud SDK or our own code."""
    if type(exc).__module__.startswith(_DB_MODULES):
        return True
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith(_DB_MODULES):
            return True
        tb = tb.tb_next
    return False


def is_database_unavailable(exc: BaseException) -> bool:
    """True when `exc` says the database could not be reached (not that a statement failed)."""
    for item in _causes(exc):
        if isinstance(item, OSError | TimeoutError) and _raised_by_database_code(item):
            return True
        if isinstance(item, DBAPIError) and item.connection_invalidated:
            return True
        state = getattr(item, "sqlstate", None)
        if isinstance(state, str) and state.startswith(_UNREACHABLE_STATES):
            return True
        if isinstance(item, OperationalError | InterfaceError):
            text = str(item).lower()
            if any(word in text for word in _UNREACHABLE_WORDS):
                return True
    return False


def _reason(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


class LoopDbHealth:
    """One loop's view of the database; tell it how each pass ended, it logs what is due."""

    def __init__(self, log: logging.Logger, what: str, clock: Callable[[], datetime]) -> None:
        self.log = log
        self.what = what  # e.g. "scheduling pass for pool default"
        self.clock = clock
        self.health = DbHealth()

    def succeeded(self) -> None:
        self._observe(Outcome.OK, None)

    def failed(self, exc: BaseException) -> None:
        outcome = Outcome.DB_UNAVAILABLE if is_database_unavailable(exc) else Outcome.OTHER_ERROR
        self._observe(outcome, exc)

    def _observe(self, outcome: Outcome, exc: BaseException | None) -> None:
        now = self.clock()
        before = self.health
        self.health, note = observe(before, outcome, now)
        if note is Note.WENT_DOWN and exc is not None:
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
        elif note is Note.FAILED and exc is not None:
            self.log.error("%s failed", self.what, exc_info=exc)
