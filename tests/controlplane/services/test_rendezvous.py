"""The rendezvous bookkeeping without a master: member order and the arrival board."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from controlplane.db.models import Allocation
from controlplane.domain.errors import NotFound
from controlplane.services import rendezvous as rdv


def allocation(placement: dict[str, list[int]]) -> Allocation:
    return Allocation(
        allocation_id="t.1",
        task_id="t",
        state="RUNNING",
        token_hash="",
        placement=placement,
        start_time=datetime.now(UTC),
    )


def test_members_follow_the_scheduler_numbering() -> None:
    alloc = allocation({f"agent-{i:02d}": [0, 1] for i in reversed(range(12))})
    group = rdv.members(alloc)
    assert [m.resources_id for m in group] == [f"t.1-{r}" for r in range(12)]
    assert group[10].agent_id == "agent-10" and group[10].slots == 2
    info = rdv.info_for(group, "t.1-10", lambda agent: f"10.0.0.{agent[-2:]}")
    assert info.rank == 10 and info.addresses[0] == "10.0.0.00" and info.slots == [2] * 12
    with pytest.raises(NotFound, match=r"resources t\.1-12 not found in allocation t\.1"):
        rdv.member_of(alloc, "t.1-12")


async def test_board_completes_once_everyone_arrived_and_remembers() -> None:
    board = rdv.RendezvousBoard()
    everyone = frozenset({"t.1-0", "t.1-1"})
    assert board.arrive("t.1", "t.1-1", everyone) is False
    assert board.arrive("t.1", "t.1-1", everyone) is False  # a retried call counts once
    assert await board.wait("t.1", 0.05) is False
    waiter = asyncio.ensure_future(board.wait("t.1", 5))
    await asyncio.sleep(0)
    assert board.arrive("t.1", "t.1-0", everyone) is True
    assert await waiter is True
    assert board.arrive("t.1", "t.1-1", everyone) is True and board.complete("t.1")
    board.forget("t.2")  # unknown: nothing happens
    assert await board.wait("t.2", 0) is False
