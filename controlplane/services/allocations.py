"""Allocations as the Core API sees them: the token, the preemption signal and its ack.

The scheduling loop creates allocations through `open_allocation` when it places a task.
A graceful stop (`request_preemption`) only preempts an allocation that is running; one that is
still being placed, pulled or started is killed at once (Determined: preempt only when ready).
Kills are intents recorded here; the pool loop sends the SIGKILLs (`pools._kills_due`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Task
from controlplane.domain.errors import NotFound, PermissionDenied
from controlplane.domain.states import AllocationState
from controlplane.services import auth, history
from controlplane.services.principals import Principal
from controlplane.services.reschedule import mark_reschedule


@dataclass(frozen=True)
class OpenedAllocation:
    allocation_id: str
    token: str


async def open_allocation(
    session: AsyncSession,
    task_id: str,
    *,
    slots: int,
    resource_pool: str,
    now: datetime,
    placement: dict[str, list[int]] | None = None,
    previous: int | None = None,
) -> OpenedAllocation:
    """The task's next allocation, ASSIGNED. ``previous``: how many allocations the task has had,
    when the caller has just read it (with the task) in this transaction; else it is looked up."""
    if previous is None:
        task = await session.get(Task, task_id)
        if task is None:
            raise NotFound(f"task {task_id} not found")
        previous = await session.scalar(
            select(func.count()).select_from(Allocation).where(Allocation.task_id == task_id)
        )
    allocation_id = f"{task_id}.{(previous or 0) + 1}"
    token = secrets.token_urlsafe(32)
    session.add(
        Allocation(
            allocation_id=allocation_id,
            task_id=task_id,
            state="ASSIGNED",
            token_hash=auth.token_digest(token),
            slots=slots,
            resource_pool=resource_pool,
            placement=dict(placement or {}),
            start_time=now,
        )
    )
    history.record_created(
        session, "allocation", allocation_id, AllocationState.ASSIGNED, now, "placed"
    )
    return OpenedAllocation(allocation_id=allocation_id, token=token)


async def allocation_for(
    session: AsyncSession, principal: Principal, allocation_id: str
) -> Allocation:
    alloc = await session.get(Allocation, allocation_id)
    if alloc is None:
        raise NotFound(f"allocation {allocation_id} not found")
    if principal.allocation is not None and principal.allocation.allocation_id != allocation_id:
        raise PermissionDenied(f"this task's token is not valid for allocation {allocation_id}")
    if principal.allocation is None and not principal.user.admin:
        owner = await session.scalar(select(Task.owner_id).where(Task.task_id == alloc.task_id))
        if owner != principal.user.id:
            raise PermissionDenied(f"allocation {allocation_id} belongs to another user")
    return alloc


async def should_preempt(session: AsyncSession, allocation_id: str) -> bool:
    value = await session.scalar(
        select(Allocation.preempt_requested).where(Allocation.allocation_id == allocation_id)
    )
    return bool(value)


def is_ready(alloc: Allocation) -> bool:
    """Ready for a graceful stop: its containers run the task (there is a harness to ask)."""
    return alloc.state == AllocationState.RUNNING.value


async def request_preemption(
    session: AsyncSession, allocation_id: str, *, reason: str, now: datetime
) -> bool:
    """Ask the allocation to stop gracefully; True when this is a new request.

    A running allocation gets the preemption signal (its harness checkpoints, acknowledges and
    exits; `preemption_timeout` later it is killed). One that is not running yet is killed now.
    """
    alloc = await session.get(Allocation, allocation_id)
    if alloc is None:
        raise NotFound(f"allocation {allocation_id} not found")
    if alloc.preempt_requested or alloc.end_time is not None:
        return False
    if not is_ready(alloc):
        return await request_kill(session, alloc, f"{reason} before it was running", now)
    alloc.preempt_requested = True
    history.note_preemption(session, alloc, reason, now)
    return True


async def request_kill(session: AsyncSession, alloc: Allocation, why: str, now: datetime) -> bool:
    """Record that the master kills this allocation; True unless already asked or ended."""
    if alloc.end_time is not None:
        return False
    if await history.kills_requested(session, [alloc.allocation_id]):
        return False
    history.note_kill(session, alloc, why, now)
    mark_reschedule(session, alloc.resource_pool)
    return True


async def ack_preemption(session: AsyncSession, principal: Principal, allocation_id: str) -> None:
    alloc = await allocation_for(session, principal, allocation_id)
    alloc.preempt_acked = True
