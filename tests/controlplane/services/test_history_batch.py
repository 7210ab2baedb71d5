"""`history.batched`: the state changes recorded inside are written as one INSERT at its end,
seen by the history's own reads inside it, and left in the session if the block fails."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event, select

from controlplane.db.models import StateChange
from controlplane.db.session import make_engine, make_sessionmaker, transaction, upgrade
from controlplane.services import history

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class _Alloc:
    allocation_id = "1.r1.1"
    state = "RUNNING"


async def test_batched_rows_go_out_once_are_read_inside_and_survive_a_failure(
    db_url: str,
) -> None:
    await upgrade(db_url)
    engine = make_engine(db_url)
    maker = make_sessionmaker(engine)
    inserts: list[str] = []

    def seen(_c: Any, _cur: Any, stmt: str, *_: Any) -> None:
        if stmt.startswith("INSERT INTO state_changes"):
            inserts.append(stmt)

    event.listen(engine.sync_engine, "before_cursor_execute", seen)
    try:
        async with transaction(maker) as s, history.batched(s):
            history.note(s, "trial", "1", "ACTIVE", "one", NOW)
            history.note(s, "trial", "1", "ACTIVE", "two", NOW)
            history.note_kill(s, _Alloc(), "why", NOW)  # type: ignore[arg-type]
            assert await history.kills_requested(s, [_Alloc.allocation_id])  # read inside
            history.note(s, "trial", "1", "ACTIVE", "three", NOW)
        assert len(inserts) == 2  # three rows before the read, one after: no insert per row
        with pytest.raises(RuntimeError):
            async with transaction(maker) as s, history.batched(s):
                history.note(s, "trial", "2", "ACTIVE", "kept", NOW)
                raise RuntimeError("the block fails")
        async with transaction(maker) as s:
            try:
                async with history.batched(s):
                    history.note(s, "trial", "3", "ACTIVE", "caught", NOW)
                    raise RuntimeError("caught by the caller, who commits")
            except RuntimeError:
                pass
        async with maker() as s:
            reasons = list(await s.scalars(select(StateChange.reason).order_by(StateChange.id)))
        assert reasons == ["one", "two", "kill: why", "three", "caught"]
    finally:
        await engine.dispose()
