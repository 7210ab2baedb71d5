"""The SQLite engine's cursor: one hop to aiosqlite's worker thread per statement, and the
DBAPI behaviour SQLAlchemy relies on (rows, rowcount, lastrowid, executemany, RETURNING,
errors, streamed results) unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiosqlite
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from controlplane.db.session import make_engine


@pytest.fixture
async def engine(tmp_path: Path) -> Any:
    e = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'driver.db'}")
    async with e.begin() as conn:
        await conn.execute(sa.text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)"))
    yield e
    await e.dispose()


async def test_a_statement_is_one_call_to_the_worker_thread(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[object] = []
    queue_call = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kw: Any) -> Any:
        calls.append(fn)
        return await queue_call(self, fn, *args, **kw)

    async with engine.connect() as conn:
        await conn.execute(sa.text("SELECT 1"))  # the connection's setup is not counted
        monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
        rows = (await conn.execute(sa.text("SELECT 1, 'a'"))).all()
        assert rows == [(1, "a")]
        assert len(calls) == 1  # SQLAlchemy's own cursor made four (open, execute, fetch, close)
        calls.clear()
        await conn.execute(sa.text("INSERT INTO t (name) VALUES ('x')"))
        assert len(calls) == 1


async def test_rows_counts_ids_and_returning(engine: AsyncEngine) -> None:
    t = sa.Table(
        "t",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String),
    )
    async with engine.begin() as conn:
        one = await conn.execute(t.insert().values(name="a"))
        assert one.inserted_primary_key == (1,)  # lastrowid
        many = await conn.execute(t.insert(), [{"name": "b"}, {"name": "c"}])
        assert many.rowcount == 2
        back = await conn.execute(t.insert().returning(t.c.id, t.c.name), [{"name": "d"}])
        assert back.all() == [(4, "d")]
        updated = await conn.execute(t.update().where(t.c.id > 2).values(name=t.c.name + "!"))
        assert updated.rowcount == 2
        rows = (await conn.execute(sa.select(t).order_by(t.c.id))).all()
        assert rows == [(1, "a"), (2, "b"), (3, "c!"), (4, "d!")]
        assert (await conn.execute(sa.select(t).where(t.c.id == 99))).first() is None
        streamed = await conn.stream(sa.select(t.c.name).order_by(t.c.id))
        assert [r async for r in streamed.scalars()] == ["a", "b", "c!", "d!"]


async def test_errors_are_sqlalchemy_errors_and_the_connection_goes_on(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as conn:
        await conn.execute(sa.text("INSERT INTO t (name) VALUES ('x')"))
        with pytest.raises(sa.exc.IntegrityError):
            await conn.execute(sa.text("INSERT INTO t (name) VALUES ('x')"))
        with pytest.raises(sa.exc.OperationalError):
            await conn.execute(sa.text("SELECT nope FROM t"))
        assert (await conn.execute(sa.text("SELECT count(*) FROM t"))).scalar() == 1


async def test_commit_and_rollback_outside_a_transaction_are_no_call(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool rolls back each connection it gets back (after a commit too), and a transaction
    that only read never began one: neither is a hop. Inside a transaction both still are."""
    calls: list[object] = []
    queue_call = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kw: Any) -> Any:
        calls.append(getattr(fn, "__name__", fn))
        return await queue_call(self, fn, *args, **kw)

    async with engine.connect() as conn:
        await conn.execute(sa.text("SELECT 1"))  # the connection's setup is not counted
    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    async with engine.begin() as conn:  # a read: its commit and the pool's rollback are free
        await conn.execute(sa.text("SELECT count(*) FROM t"))
    assert calls == ["_run"]
    calls.clear()
    async with engine.begin() as conn:  # a write: committed (one hop), the rollback free
        await conn.execute(sa.text("INSERT INTO t (name) VALUES ('kept')"))
    assert calls == ["_run", "commit"]
    calls.clear()
    async with engine.connect() as conn:  # a write rolled back: still rolled back
        await conn.execute(sa.text("INSERT INTO t (name) VALUES ('dropped')"))
        await conn.rollback()
    assert calls == ["_run", "rollback"]
    async with engine.connect() as conn:
        names = (await conn.execute(sa.text("SELECT name FROM t"))).scalars().all()
    assert names == ["kept"]
