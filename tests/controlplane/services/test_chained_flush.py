"""`chained_flush`: a block's last writes in one statement on PostgreSQL, with the same outcome
as the unit of work's own flush on both databases (the SQLite rows are the contract the chained
statement must keep): the rows changed, the objects clean, a row gone underneath refused."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import delete, event, select
from sqlalchemy.orm.exc import StaleDataError

from controlplane.db.models import StateChange, User
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services import history
from tests.support.db_template import migrated

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
async def maker(db_url: str) -> Any:
    engine = make_engine(await migrated(db_url))
    maker = make_sessionmaker(engine)
    async with transaction(maker) as s:
        s.add_all(
            User(username=f"u{i}", display_name=f"old {i}", created_at=NOW, modified_at=NOW)
            for i in range(3)
        )
    yield maker
    await engine.dispose()


def _statements(maker: Any) -> list[str]:
    seen: list[str] = []
    event.listen(
        maker.kw["bind"].sync_engine,
        "before_cursor_execute",
        lambda _c, _cur, stmt, *_: seen.append(stmt),
    )
    return seen


async def _users(maker: Any) -> dict[str, tuple[str | None, bool]]:
    async with maker() as s:
        rows = await s.scalars(select(User).where(User.username.like("u%")))
        return {u.username: (u.display_name, u.active) for u in rows}


async def test_changes_and_state_changes_go_out_as_one_statement_on_postgresql(
    maker: Any,
) -> None:
    dialect = maker.kw["bind"].dialect.name
    seen = _statements(maker)
    async with transaction(maker) as s:
        users = {u.username: u for u in await s.scalars(select(User).where(User.id > 0))}
        seen.clear()
        async with history.batched(s):
            users["u0"].display_name = "new 0"
            users["u2"].active = False
            history.note(s, "user", "u0", "ACTIVE", "renamed", NOW)
        written = list(seen)
        assert not s.dirty  # nothing left for the commit's flush
        assert users["u0"].display_name == "new 0" and users["u2"].active is False
        seen.clear()
    assert not [x for x in seen if x.startswith(("UPDATE", "INSERT"))], seen
    if dialect == "postgresql":
        assert len(written) == 1 and written[0].startswith("WITH"), written
    else:
        assert len(written) == 3, written  # two UPDATEs and the INSERT, the unit of work's way
    assert await _users(maker) == {"u0": ("new 0", True), "u1": ("old 1", True),
                                   "u2": ("old 2", False)}  # fmt: skip
    async with maker() as s:
        notes = list(
            await s.scalars(select(StateChange.reason).where(StateChange.entity == "user"))
        )
    assert notes == ["renamed"]


async def test_a_row_deleted_underneath_is_refused_and_nothing_is_written(maker: Any) -> None:
    with pytest.raises(StaleDataError):
        async with transaction(maker) as s:
            users = list(await s.scalars(select(User).where(User.username.in_(["u0", "u1"]))))
            async with maker() as other, other.begin():
                await other.execute(delete(User).where(User.username == "u1"))
            async with history.batched(s):
                for u in users:
                    u.display_name = "changed"
                history.note(s, "user", "u0", "ACTIVE", "renamed", NOW)
    assert await _users(maker) == {"u0": ("old 0", True), "u2": ("old 2", True)}
    async with maker() as s:
        assert not list(await s.scalars(select(StateChange).where(StateChange.entity == "user")))


async def test_a_new_object_leaves_the_flush_to_the_session(maker: Any) -> None:
    seen = _statements(maker)
    async with transaction(maker) as s:
        u0 = await s.scalar(select(User).where(User.username == "u0"))
        assert u0 is not None
        seen.clear()
        async with history.batched(s):
            u0.display_name = "new 0"
            s.add(User(username="u3", created_at=NOW, modified_at=NOW))
            history.note(s, "user", "u0", "ACTIVE", "renamed", NOW)
        assert not [x for x in seen if x.startswith("WITH")], seen
    users = await _users(maker)
    assert users["u0"] == ("new 0", True) and "u3" in users
