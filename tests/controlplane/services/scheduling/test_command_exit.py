"""A command's end on Core's path writes what the ORM path (close_allocation) writes: the
allocation's, command's and task's rows and the state changes, for every way a command ends,
on both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from controlplane.db import models as m
from controlplane.db.session import make_engine, make_sessionmaker, transaction, upgrade
from controlplane.domain.trial_exit import AllocationExit
from controlplane.services import history
from controlplane.services.scheduling import command_exit
from controlplane.services.scheduling.agent_events import close_allocation

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ENDS = {
    "exit 0": (AllocationExit(exit_code=0), "", "ACTIVE"),
    "exit 3": (AllocationExit(exit_code=3), "", "ACTIVE"),
    "failure": (AllocationExit(exit_code=None, failure="TASK_ERROR"), "image not found", "ACTIVE"),
    "killed by the master": (AllocationExit(exit_code=137, killed=True), "", "ACTIVE"),
    "killed by its user": (AllocationExit(exit_code=137), "", "TERMINATING"),
    "ended already": (AllocationExit(exit_code=0), "", "TERMINATED"),
}


async def _owner(s) -> None:  # type: ignore[no-untyped-def]
    """User 1 and workspace 1, whose commands the tests end."""
    s.add(m.User(id=1, username="u", created_at=T0, modified_at=T0))
    await s.flush()
    s.add(m.Workspace(id=1, name="w", user_id=1, created_at=T0))
    await s.flush()


async def _seed(s, task_id: str, command_state: str) -> None:  # type: ignore[no-untyped-def]
    s.add(m.Task(task_id=task_id, task_type="COMMAND", job_id=None, owner_id=1, start_time=T0))
    await s.flush()
    s.add(m.Command(task_id=task_id, workspace_id=1, state=command_state, config={}))
    s.add(
        m.Allocation(
            allocation_id=f"{task_id}.1", task_id=task_id, state="RUNNING",
            token_hash=f"t-{task_id}", slots=1, resource_pool="default",
            placement={"a1": [0]}, start_time=T0,
        )
    )  # fmt: skip


async def _rows(s, task_id: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    alloc = await s.get(m.Allocation, f"{task_id}.1")
    cmd = await s.get(m.Command, task_id)
    task = await s.get(m.Task, task_id)
    changes = (
        await s.execute(
            sa.select(m.StateChange.entity, m.StateChange.from_state, m.StateChange.to_state,
                      m.StateChange.reason, m.StateChange.at)
            .where(m.StateChange.entity_id.in_([task_id, f"{task_id}.1"]))
            .order_by(m.StateChange.entity)
        )
    ).all()  # fmt: skip
    return {
        "allocation": (alloc.state, alloc.exit_reason, alloc.end_time),
        "command": (cmd.state, cmd.exit_code, cmd.exit_status),
        "task end": task.end_time,
        "changes": [tuple(c) for c in changes],
    }


@pytest.mark.parametrize("case", list(ENDS))
async def test_core_and_orm_paths_write_the_same(db_url: str, case: str) -> None:
    ended, detail, command_state = ENDS[case]
    now = T0 + timedelta(minutes=3)
    await upgrade(db_url)
    engine = make_engine(db_url)
    try:
        sessions = make_sessionmaker(engine)
        async with transaction(sessions) as s:
            await _owner(s)
            await _seed(s, "orm", command_state)
            await _seed(s, "core", command_state)
        async with transaction(sessions) as s:
            alloc = await s.get(m.Allocation, "orm.1")
            await close_allocation(s, alloc, ended, now, detail=detail)
        async with transaction(sessions) as s:
            ending = await command_exit.read_ending(s, "core.1")
            assert ending is not None and not ending.is_trial and not ending.ended_before
            assert await command_exit.end_command_allocation(s, ending, ended, now, detail)
        async with transaction(sessions) as s:
            assert await _rows(s, "core") == await _rows(s, "orm")
            ending = await command_exit.read_ending(s, "core.1")
            assert ending is not None and ending.ended_before
            # Ended once: a second report writes nothing.
            assert not await command_exit.end_command_allocation(s, ending, ended, now, detail)
            assert len((await _rows(s, "core"))["changes"]) == len(
                (await _rows(s, "orm"))["changes"]
            )
    finally:
        await engine.dispose()


async def test_a_kill_note_is_read_with_the_allocation(db_url: str) -> None:
    await upgrade(db_url)
    engine = make_engine(db_url)
    try:
        sessions = make_sessionmaker(engine)
        async with transaction(sessions) as s:
            await _owner(s)
            await _seed(s, "k", "ACTIVE")
            await s.flush()
            alloc = await s.get(m.Allocation, "k.1")
            history.note_kill(s, alloc, "the user asked", T0)
        async with transaction(sessions) as s:
            ending = await command_exit.read_ending(s, "k.1")
            assert ending is not None and ending.killed and ending.command_state is not None
            assert await command_exit.read_ending(s, "nope.1") is None
    finally:
        await engine.dispose()
