"""SQLAlchemy's aiosqlite adapter with one thread hop per statement instead of four.

aiosqlite runs SQLite on a worker thread; each awaited call is a hop to that thread and back
(a queue, a future, the event loop's self-pipe, two GIL hand-overs). SQLAlchemy's cursor makes
four per statement (open a cursor, execute, fetch the rows, close it), and the hops, not SQLite,
were most of the master's CPU per statement. This cursor sends the whole statement to the
worker as one function: it opens the sqlite3 cursor, executes, fetches every row (as
SQLAlchemy's own cursor does) and closes it there. Server-side cursors (streamed results) keep
SQLAlchemy's cursor. Plugged in with `create_async_engine(..., module=dbapi())`.
"""

from __future__ import annotations

import collections
import sqlite3
from typing import Any

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT
from sqlalchemy.util.concurrency import await_

_Result = tuple[Any, list[Any], int, int | None]


def _run(conn: sqlite3.Connection, operation: str, parameters: Any, many: bool) -> _Result:
    """On the worker thread: the statement from cursor to close."""
    cur = conn.cursor()
    try:
        if many:
            cur.executemany(operation, parameters)
        elif parameters is None:
            cur.execute(operation)
        else:
            cur.execute(operation, parameters)
        description = cur.description
        rows = cur.fetchall() if description else []
        return description, rows, cur.rowcount, cur.lastrowid
    finally:
        cur.close()


class OneHopCursor(AsyncAdapt_aiosqlite_cursor):
    __slots__ = ("_arraysize", "_description", "_lastrowid", "_rowcount")

    def __init__(self, adapt_connection: Any) -> None:
        # No aiosqlite cursor: opening one is a hop of its own.
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None
        self._arraysize = 1

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> int:
        return self._lastrowid  # type: ignore[return-value]

    @property
    def arraysize(self) -> int:
        return self._arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._arraysize = value

    async def _async_soft_close(self) -> None:
        return  # nothing is open on the worker between statements

    def close(self) -> None:
        self._rows.clear()

    async def _statement(self, operation: Any, parameters: Any, many: bool) -> None:
        async with self._adapt_connection._execute_mutex:
            conn = self._connection._conn
            description, rows, rowcount, lastrowid = await self._connection._execute(
                _run, conn, operation, parameters, many
            )
        self._description = description
        self._rows = collections.deque(rows)
        self._rowcount = rowcount
        self._lastrowid = lastrowid

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        try:
            await_(self._statement(operation, parameters, False))
        except Exception as error:
            self._adapt_connection._handle_exception(error)

    def executemany(self, operation: Any, seq_of_parameters: Any) -> Any:
        try:
            await_(self._statement(operation, seq_of_parameters, True))
        except Exception as error:
            self._adapt_connection._handle_exception(error)

    def nextset(self) -> None:
        return None  # sqlite3 has a single result set per statement

    def setinputsizes(self, *inputsizes: Any) -> None:
        return None


class _Connection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()
    _cursor_cls = OneHopCursor

    # sqlite3's commit and rollback do nothing outside a transaction (they look at
    # sqlite3_get_autocommit first); neither is a hop then. The pool rolls back every connection
    # it gets back, after each commit too, and a transaction that only read never began one:
    # two of a trial's hops. `in_transaction` reads the same flag, without the worker thread
    # (it is a read of the connection's state, and no statement of this connection is running:
    # SQLAlchemy uses one connection from one task at a time).
    def _in_transaction(self) -> bool:
        raw = self._connection._connection
        return raw is not None and raw.in_transaction

    def rollback(self) -> None:
        if self._in_transaction():
            super().rollback()

    def commit(self) -> None:
        if self._in_transaction():
            super().commit()


class _Dbapi(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> AsyncAdapt_aiosqlite_connection:
        adapted = super().connect(*arg, **kw)
        return _Connection(self, adapted._connection)


def dbapi() -> AsyncAdapt_aiosqlite_dbapi:
    """The DBAPI module for `create_async_engine(url, module=...)` on sqlite+aiosqlite."""
    return _Dbapi(aiosqlite, sqlite3)
