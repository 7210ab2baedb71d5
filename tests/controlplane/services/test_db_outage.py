"""Which failures of a loop's pass are an unreachable database, and what the loop logs."""

from __future__ import annotations

import logging
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from controlplane.services.db_outage import LoopDbHealth, is_database_unavailable


class _StateError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"sqlstate {sqlstate}")
        self.sqlstate = sqlstate


def _wrapped(orig: Exception) -> DBAPIError:
    return DBAPIError("SELECT 1", {}, orig)


def _our_connection_refused() -> OSError:
    """An OSError raised by our own code (a cloud SDK's, say), not by a database driver."""
    try:
        raise ConnectionRefusedError(111, "refused")
    except OSError as exc:
        return exc


UNAVAILABLE = [
    OperationalError("SELECT 1", {}, sqlite3.OperationalError("unable to open database file")),
    OperationalError("SELECT 1", {}, sqlite3.OperationalError("database is locked")),
    _wrapped(_StateError("08006")),  # connection failure
    _wrapped(_StateError("57P03")),  # cannot connect now: the server is starting
    _wrapped(_StateError("57P01")),  # admin shutdown
    DBAPIError("SELECT 1", {}, Exception("gone"), connection_invalidated=True),
]
NOT_UNAVAILABLE = [
    ValueError("a bug"),
    KeyError("pool"),
    IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE constraint failed")),
    _wrapped(_StateError("22021")),  # a value the database refused
    _our_connection_refused(),
]


@pytest.mark.parametrize("exc", UNAVAILABLE, ids=lambda e: type(e).__name__ + str(e)[:30])
def test_unreachable_database(exc: BaseException) -> None:
    assert is_database_unavailable(exc)


@pytest.mark.parametrize("exc", NOT_UNAVAILABLE, ids=lambda e: type(e).__name__ + str(e)[:30])
def test_other_failures(exc: BaseException) -> None:
    assert not is_database_unavailable(exc)


def test_a_wrapped_cause_counts() -> None:
    try:
        try:
            raise UNAVAILABLE[0]
        except OperationalError as inner:
            raise RuntimeError("the pass failed") from inner
    except RuntimeError as outer:
        assert is_database_unavailable(outer)


def test_the_loop_logs_an_outage_in_two_lines_and_a_bug_in_full(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    health = LoopDbHealth(logging.getLogger("t.loop"), "pass for pool p", lambda: now[0])
    caplog.set_level(logging.INFO, logger="t.loop")
    for _ in range(5):
        health.failed(UNAVAILABLE[0])
        now[0] += timedelta(seconds=1)
    health.succeeded()
    health.succeeded()
    health.failed(ValueError("a bug"))
    lines = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert lines == [
        (
            "WARNING",
            "pass for pool p: the database is unavailable (OperationalError: "
            "(sqlite3.OperationalError) unable to open database file); "
            "retrying quietly until it is back",
            False,
        ),
        ("INFO", "pass for pool p: the database is back after 5 failed passes in 5.0 s", False),
        ("ERROR", "pass for pool p failed", True),
    ]
