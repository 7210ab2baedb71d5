"""Which live allocations the master kills: recorded kill requests, and preemptions that ran
past their experiment's `preemption_timeout` (Determined: a preemption starts a timer; when it
fires, the allocation is killed). The pool loop sends the SIGKILLs (`pools._kills_due`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Experiment, StateChange, Trial
from controlplane.services import history

DEFAULT_PREEMPTION_TIMEOUT_S = 3600


def preemption_timeout(config: dict[str, Any]) -> timedelta:
    value = config.get("preemption_timeout")
    return timedelta(seconds=DEFAULT_PREEMPTION_TIMEOUT_S if value is None else float(value))


def is_past_timeout(asked_at: datetime, timeout: timedelta, now: datetime) -> bool:
    return now - asked_at >= timeout


async def expire_preemptions(session: AsyncSession, pool: str, now: datetime) -> list[str]:
    """Record a kill for every preempted allocation of the pool whose timeout has passed."""
    rows = (
        await session.execute(
            select(Allocation, Experiment.config)
            .join(Trial, Trial.task_id == Allocation.task_id)
            .join(Experiment, Experiment.id == Trial.experiment_id)
            .where(
                Allocation.resource_pool == pool,
                Allocation.end_time.is_(None),
                Allocation.preempt_requested.is_(True),
            )
        )
    ).all()
    if not rows:
        return []
    ids = [alloc.allocation_id for alloc, _ in rows]
    asked = await history.preemptions_requested(session, ids)
    killed = await history.kills_requested(session, ids)
    out: list[str] = []
    for alloc, config in rows:
        at = asked.get(alloc.allocation_id)
        if at is None or alloc.allocation_id in killed:
            continue
        timeout = preemption_timeout(config or {})
        if is_past_timeout(at, timeout, now):
            seconds = f"{timeout.total_seconds():g}s"
            why = f"preemption not finished within preemption_timeout ({seconds})"
            history.note_kill(session, alloc, why, now)
            out.append(alloc.allocation_id)
    return out


async def requested_kills(session: AsyncSession, pool: str) -> dict[str, dict[str, Any]]:
    """Live allocations of the pool the master has asked to kill: id → placement."""
    rows = await session.execute(
        select(Allocation.allocation_id, Allocation.placement)
        .join(
            StateChange,
            and_(
                StateChange.entity == "allocation",
                StateChange.entity_id == Allocation.allocation_id,
            ),
        )
        .where(
            Allocation.resource_pool == pool,
            Allocation.end_time.is_(None),
            StateChange.reason.startswith(history.KILL_NOTE, autoescape=True),
        )
    )
    return {allocation_id: placement or {} for allocation_id, placement in rows.all()}
