"""Which errors mean "the database cannot be reached right now", and which kind of outage each is.

Every caller that must tell an outage (answer 503, retry quietly) from a bug (500, traceback)
asks `classify`: the API's error handlers, the agents' socket and the periodic loops. It looks
at the exception, what it wraps (a DBAPIError's `orig`) and what caused it, never at the clock
or the network: exceptions in, a kind (or None) out.

The decision is made from the SQLSTATE and the driver's exception class, not from message text,
except where a driver gives nothing else (SQLite's messages on Pythons without error codes).
SQLSTATE 55000 is "object not in prerequisite state": PostgreSQL raises it for a database that
is not accepting connections (`ALTER DATABASE … ALLOW_CONNECTIONS false`), but also for
statements on objects in the wrong state, and asyncpg's LockNotAvailableError (55P03) is a
subclass of its 55000 class; only a 55000 raised while connecting is an outage.
"""

from __future__ import annotations

import errno
import sqlite3
from enum import StrEnum

import asyncpg.exceptions as pg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout


class Unavailability(StrEnum):
    """Why the database could not be used; the value is what the log line says."""

    REFUSED = "connection refused"  # nothing listens on the server's port
    CONNECTION_LOST = "connection lost"  # reset, closed, SQLSTATE class 08
    CONNECT_TIMEOUT = "timed out reaching the server"
    TOO_MANY_CONNECTIONS = "too many connections"  # 53300 (server, database or role limit)
    NOT_ACCEPTING = "not accepting connections"  # 55000 on connect (ALLOW_CONNECTIONS false)
    SHUTTING_DOWN = "server shutting down"  # 57P01 admin shutdown, 57P02 crash shutdown
    STARTING_UP = "server cannot accept connections yet"  # 57P03 cannot connect now
    POOL_TIMEOUT = "no pooled connection free in time"  # SQLAlchemy's pool_timeout
    LOCKED = "database is locked"  # SQLite busy/locked past its timeout
    CANNOT_OPEN = "database file cannot be opened"  # SQLite


# SQLSTATE (exact, or a class by its first two characters) -> kind. 55000 is decided apart.
_STATES: dict[str, Unavailability] = {
    "08": Unavailability.CONNECTION_LOST,  # 08000 08001 08003 08004 08006 08007 08P01
    "53300": Unavailability.TOO_MANY_CONNECTIONS,
    "57P01": Unavailability.SHUTTING_DOWN,
    "57P02": Unavailability.SHUTTING_DOWN,
    "57P03": Unavailability.STARTING_UP,
}
_NOT_ACCEPTING_TEXT = "not currently accepting connections"
# SQLite primary result codes (`sqlite_errorcode & 0xff`, Python 3.11+).
_SQLITE_CODES = {
    5: Unavailability.LOCKED,  # SQLITE_BUSY
    6: Unavailability.LOCKED,  # SQLITE_LOCKED
    14: Unavailability.CANNOT_OPEN,  # SQLITE_CANTOPEN
}
_SQLITE_TEXTS = {
    "database is locked": Unavailability.LOCKED,
    "database table is locked": Unavailability.LOCKED,
    "unable to open database file": Unavailability.CANNOT_OPEN,
}
_DB_MODULES = ("sqlalchemy", "asyncpg", "aiosqlite", "sqlite3", "controlplane.db")


def causes(exc: BaseException) -> list[BaseException]:
    """`exc`, what it wraps (a DBAPIError's `orig`) and what caused it, without loops."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop(0)
        if item is None or any(item is s for s in seen) or len(seen) > 20:
            continue
        seen.append(item)
        todo += [getattr(item, "orig", None), item.__cause__, item.__context__]
    return seen


def _raised_by_database_code(exc: BaseException) -> bool:
    """Whether `exc` came out of a database driver or SQLAlchemy (asyncpg's connect raises a
    bare OSError), rather than from a cloud SDK, an HTTP client or our own code."""
    if type(exc).__module__.startswith(_DB_MODULES):
        return True
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith(_DB_MODULES):
            return True
        tb = tb.tb_next
    return False


def _while_connecting(chain: list[BaseException]) -> bool:
    """A SQLAlchemy error raised when opening a connection carries no statement."""
    return any(isinstance(item, DBAPIError) and item.statement is None for item in chain)


def _by_state(item: BaseException, chain: list[BaseException]) -> Unavailability | None:
    state = getattr(item, "sqlstate", None)
    if not isinstance(state, str):
        return None
    if state == "55000":
        # Only asyncpg's own 55000 class, and only while connecting (or saying so): a 55000
        # from a statement is a statement's error.
        # (SQLAlchemy's adapter copies the state; the asyncpg error it wraps comes next.)
        connecting = _while_connecting(chain) or _NOT_ACCEPTING_TEXT in str(item)
        if isinstance(item, pg.ObjectNotInPrerequisiteStateError) and connecting:
            return Unavailability.NOT_ACCEPTING
        return None
    return _STATES.get(state) or _STATES.get(state[:2])


def _by_os_error(item: BaseException) -> Unavailability | None:
    if not isinstance(item, OSError) or not _raised_by_database_code(item):
        return None
    if isinstance(item, ConnectionRefusedError) or item.errno in (
        errno.ECONNREFUSED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
    ):
        return Unavailability.REFUSED
    if isinstance(item, TimeoutError):
        return Unavailability.CONNECT_TIMEOUT
    return Unavailability.CONNECTION_LOST  # reset, broken pipe, aborted, name not resolved


def _by_sqlite(item: BaseException) -> Unavailability | None:
    if not isinstance(item, sqlite3.OperationalError):
        return None
    code = getattr(item, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _SQLITE_CODES:
        return _SQLITE_CODES[code & 0xFF]
    text = str(item).lower()
    return next((kind for words, kind in _SQLITE_TEXTS.items() if words in text), None)


def classify(exc: BaseException) -> Unavailability | None:
    """The kind of outage `exc` reports, or None when it is not one (a bug, a bad value, a
    constraint): only then is it the caller's to report as an error."""
    chain = causes(exc)
    for item in chain:
        if isinstance(item, PoolTimeout):
            return Unavailability.POOL_TIMEOUT
        kind = _by_state(item, chain) or _by_os_error(item) or _by_sqlite(item)
        if kind is not None:
            return kind
        if isinstance(item, pg.InterfaceError) and "connection is closed" in str(item):
            return Unavailability.CONNECTION_LOST
        if isinstance(item, DBAPIError) and item.connection_invalidated:
            return Unavailability.CONNECTION_LOST
    return None


def is_database_unavailable(exc: BaseException) -> bool:
    """True when `exc` says the database could not be reached (not that a statement failed)."""
    return classify(exc) is not None


def describe(exc: BaseException, kind: Unavailability) -> str:
    """`kind` and the driver's first line of `exc`'s innermost cause, for one log line."""
    inner = causes(exc)[-1]
    first = str(inner).strip().splitlines()[0] if str(inner).strip() else type(inner).__name__
    text = f"{kind.value}: {type(inner).__name__}: {first}"
    return text if len(text) <= 240 else text[:237] + "..."
