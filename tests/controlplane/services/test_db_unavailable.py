"""`classify`: which errors are a database outage, and which kind, one row per class.

The exceptions are real: asyncpg's own classes (their SQLSTATE is the class's), wrapped the way
SQLAlchemy's asyncpg dialect wraps them (its adapter error caused by asyncpg's, inside a
DBAPIError that carries no statement when it was raised while connecting), OSErrors raised from
asyncpg's frames, SQLite's errors from a real locked and a real unopenable file. Every one of
these classes is also provoked from a real PostgreSQL server in
tests/controlplane/api/test_db_outage_classes.py.
"""

from __future__ import annotations

import asyncio
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path

import asyncpg
import asyncpg.exceptions as pg
import pytest
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from controlplane.services.db_unavailable import Unavailability as U
from controlplane.services.db_unavailable import classify, describe

ADAPTER = AsyncAdapt_asyncpg_dbapi(asyncpg)
NOT_ACCEPTING = 'database "d" is not currently accepting connections'


def sa(orig: BaseException, statement: str | None = "SELECT 1") -> DBAPIError:
    """`orig` as SQLAlchemy's asyncpg dialect raises it: its adapter error (which copies the
    SQLSTATE) caused by asyncpg's, in a DBAPIError; `statement` None: raised while connecting."""
    adapted = ADAPTER.Error(str(orig), orig)
    adapted.__cause__ = orig
    wrapped = DBAPIError.instance(statement, None, adapted, ADAPTER.Error)
    wrapped.__cause__ = adapted
    return wrapped


def raised_in(module: str, exc: BaseException) -> BaseException:
    """`exc` with a traceback frame in `module` (asyncpg's connect raises bare OSErrors)."""
    try:
        exec("raise exc", {"__name__": module, "exc": exc})
    except BaseException as raised:
        return raised
    raise AssertionError("not raised")


def refused_by_asyncpg() -> BaseException:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there

    async def dial() -> None:
        await asyncpg.connect(host="127.0.0.1", port=port, user="x", timeout=5)

    try:
        asyncio.run(dial())
    except OSError as exc:
        return exc
    raise AssertionError("connected to a closed port")


def sqlite_locked(tmp: Path) -> BaseException:
    path = tmp / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, timeout=0)
    try:
        other.execute("INSERT INTO t VALUES (1)")
    except sqlite3.OperationalError as exc:
        return OperationalError("INSERT INTO t VALUES (1)", {}, exc)
    finally:
        other.close()
        holder.close()
    raise AssertionError("not locked")


def sqlite_cannot_open(_: Path) -> BaseException:
    try:
        sqlite3.connect("/proc/no-such-dir/x.db")
    except sqlite3.OperationalError as exc:
        return OperationalError(None, None, exc)
    raise AssertionError("opened")


def ours_refused() -> BaseException:
    """A ConnectionRefusedError from our own code (a cloud SDK, an HTTP client): not the DB."""
    return raised_in("controlplane.services.provisioning", ConnectionRefusedError(111, "x"))


Make = Callable[[Path], BaseException]
ROWS: list[tuple[str, Make, U | None]] = [
    # connection refused or reset
    ("refused by a closed port", lambda _: refused_by_asyncpg(), U.REFUSED),
    (
        "reset",
        lambda _: raised_in("asyncpg.connection", ConnectionResetError(104, "reset")),
        U.CONNECTION_LOST,
    ),
    (
        "broken pipe",
        lambda _: raised_in("asyncpg.protocol", BrokenPipeError(32, "pipe")),
        U.CONNECTION_LOST,
    ),
    (
        "connect timeout",
        lambda _: raised_in("asyncpg.connect_utils", TimeoutError()),
        U.CONNECT_TIMEOUT,
    ),
    # SQLSTATE class 08
    ("08000", lambda _: sa(pg.PostgresConnectionError("x")), U.CONNECTION_LOST),
    ("08001", lambda _: sa(pg.ClientCannotConnectError("x"), None), U.CONNECTION_LOST),
    (
        "08003",
        lambda _: sa(pg.ConnectionDoesNotExistError("closed mid-operation")),
        U.CONNECTION_LOST,
    ),
    ("08004", lambda _: sa(pg.ConnectionRejectionError("x"), None), U.CONNECTION_LOST),
    ("08006", lambda _: sa(pg.ConnectionFailureError("x")), U.CONNECTION_LOST),
    ("08P01", lambda _: sa(pg.ProtocolViolationError("x")), U.CONNECTION_LOST),
    (
        "interface: connection is closed",
        lambda _: sa(pg.InterfaceError("cannot perform operation: connection is closed")),
        U.CONNECTION_LOST,
    ),
    (
        "invalidated",
        lambda _: DBAPIError("SELECT 1", {}, Exception("gone"), connection_invalidated=True),
        U.CONNECTION_LOST,
    ),
    # 53300
    ("53300", lambda _: sa(pg.TooManyConnectionsError("too many"), None), U.TOO_MANY_CONNECTIONS),
    # 55000, only while connecting
    (
        "55000 on connect",
        lambda _: sa(pg.ObjectNotInPrerequisiteStateError(NOT_ACCEPTING), None),
        U.NOT_ACCEPTING,
    ),
    (
        "55000 bare asyncpg",
        lambda _: pg.ObjectNotInPrerequisiteStateError(NOT_ACCEPTING),
        U.NOT_ACCEPTING,
    ),
    (
        "55000 from a statement",
        lambda _: sa(pg.ObjectNotInPrerequisiteStateError("lastval is not yet defined")),
        None,
    ),
    (
        "55P03 lock not available",
        lambda _: sa(pg.LockNotAvailableError("could not obtain lock")),
        None,
    ),
    ("55006 object in use", lambda _: sa(pg.ObjectInUseError("in use")), None),
    # 57P0x
    ("57P01", lambda _: sa(pg.AdminShutdownError("terminating connection")), U.SHUTTING_DOWN),
    ("57P02", lambda _: sa(pg.CrashShutdownError("crash")), U.SHUTTING_DOWN),
    ("57P03", lambda _: sa(pg.CannotConnectNowError("starting up"), None), U.STARTING_UP),
    # SQLAlchemy's pool
    (
        "pool timeout",
        lambda _: PoolTimeout("QueuePool limit of size 1 overflow 0 reached"),
        U.POOL_TIMEOUT,
    ),
    # SQLite
    ("sqlite locked", sqlite_locked, U.LOCKED),
    ("sqlite cannot open", sqlite_cannot_open, U.CANNOT_OPEN),
    # not outages
    ("a bug", lambda _: ValueError("a bug"), None),
    ("unique violation", lambda _: sa(pg.UniqueViolationError("duplicate key")), None),
    (
        "sqlite unique",
        lambda _: IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE")),
        None,
    ),
    ("22021 bad value", lambda _: sa(pg.CharacterNotInRepertoireError("NUL")), None),
    ("our own refused connection", lambda _: ours_refused(), None),
]


@pytest.mark.parametrize(("make", "kind"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_classify(make: Make, kind: U | None, tmp_path: Path) -> None:
    assert classify(make(tmp_path)) is kind


def test_a_cause_deeper_down_counts() -> None:
    try:
        try:
            raise sa(pg.AdminShutdownError("terminating connection"))
        except DBAPIError as inner:
            raise RuntimeError("the pass failed") from inner
    except RuntimeError as outer:
        assert classify(outer) is U.SHUTTING_DOWN


def test_the_log_text_names_the_kind_and_the_driver_error() -> None:
    exc = sa(pg.ObjectNotInPrerequisiteStateError(NOT_ACCEPTING), None)
    assert describe(exc, U.NOT_ACCEPTING) == (
        f"not accepting connections: ObjectNotInPrerequisiteStateError: {NOT_ACCEPTING}"
    )
