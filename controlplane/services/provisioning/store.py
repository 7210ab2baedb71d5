"""The provisioning loop's database I/O: short transactions, none held across a cloud call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import (
    ProvisionerEvent,
    ProvisionerInstance,
    ProvisionerLaunch,
    ProvisionerState,
)
from provisioners.instance_prices import LifetimeChanges, PricedInstance, lifetime_changes

# Decisions kept per pool; older ones are pruned as new ones arrive.
EVENTS_KEPT = 500


@dataclass(frozen=True)
class PendingLaunch:
    request_id: str
    count: int
    requested_at: datetime


@dataclass(frozen=True)
class EventRow:
    at: datetime
    kind: str
    reason: str
    instance_ids: tuple[str, ...]


async def pending_launches(session: AsyncSession, pool: str) -> list[PendingLaunch]:
    """Launches recorded but not known to have reached the cloud (a crash between the two)."""
    rows = await session.execute(
        select(
            ProvisionerLaunch.request_id, ProvisionerLaunch.count, ProvisionerLaunch.requested_at
        )
        .where(ProvisionerLaunch.pool == pool, ProvisionerLaunch.state == "pending")
        .order_by(ProvisionerLaunch.requested_at)
    )
    return [PendingLaunch(r.request_id, r.count, r.requested_at) for r in rows]


async def record_launch(
    session: AsyncSession, pool: str, request_id: str, count: int, now: datetime
) -> None:
    session.add(
        ProvisionerLaunch(
            request_id=request_id,
            pool=pool,
            count=count,
            state="pending",
            instance_ids={},
            requested_at=now,
        )
    )


async def finish_launch(
    session: AsyncSession,
    request_id: str,
    now: datetime,
    *,
    instance_ids: Sequence[str] = (),
    error: str | None = None,
) -> None:
    await session.execute(
        update(ProvisionerLaunch)
        .where(ProvisionerLaunch.request_id == request_id)
        .values(
            state="failed" if error is not None else "done",
            instance_ids={"ids": list(instance_ids)},
            error=error,
            finished_at=now,
        )
    )


async def add_events(
    session: AsyncSession, pool: str, events: Sequence[EventRow], *, keep: int = EVENTS_KEPT
) -> None:
    if not events:
        return
    for e in events:
        session.add(
            ProvisionerEvent(
                pool=pool,
                at=e.at,
                kind=e.kind,
                reason=e.reason,
                instance_ids={"ids": list(e.instance_ids)},
            )
        )
    await session.flush()
    cutoff = await session.scalar(
        select(ProvisionerEvent.id)
        .where(ProvisionerEvent.pool == pool)
        .order_by(ProvisionerEvent.id.desc())
        .offset(keep)
        .limit(1)
    )
    if cutoff is not None:
        await session.execute(
            delete(ProvisionerEvent).where(
                ProvisionerEvent.pool == pool, ProvisionerEvent.id <= cutoff
            )
        )


async def recent_events(session: AsyncSession, pool: str, limit: int) -> list[EventRow]:
    rows = await session.scalars(
        select(ProvisionerEvent)
        .where(ProvisionerEvent.pool == pool)
        .order_by(ProvisionerEvent.id.desc())
        .limit(limit)
    )
    return [
        EventRow(r.at, r.kind, r.reason, tuple((r.instance_ids or {}).get("ids", ()))) for r in rows
    ]


async def load_memory(session: AsyncSession, pool: str) -> dict[str, Any]:
    row = await session.get(ProvisionerState, pool)
    return dict(row.memory) if row is not None else {}


async def save_memory(
    session: AsyncSession, pool: str, memory: dict[str, Any], now: datetime
) -> None:
    row = await session.get(ProvisionerState, pool)
    if row is None:
        session.add(ProvisionerState(pool=pool, memory=memory, updated_at=now))
    else:
        row.memory = memory
        row.updated_at = now


async def record_instance_lives(
    session: AsyncSession, pool: str, listed: Sequence[PricedInstance], now: datetime
) -> LifetimeChanges:
    """Store what the cloud's list says of the pool's instances' lives (instance_prices): rows
    for instances first seen running, an end for those no longer running. Reads only the open
    rows and the listed ones, so a pool's history never grows the tick's work."""
    ids = [p.instance.id for p in listed]
    rows = await session.execute(
        select(ProvisionerInstance.instance_id, ProvisionerInstance.ended_at).where(
            ProvisionerInstance.pool == pool,
            ProvisionerInstance.ended_at.is_(None) | ProvisionerInstance.instance_id.in_(ids),
        )
    )
    known = {r.instance_id: r.ended_at is not None for r in rows}
    changes = lifetime_changes(listed, known)
    for p in changes.opened:
        session.add(
            ProvisionerInstance(
                pool=pool,
                instance_id=p.instance.id,
                agent_name=p.instance.agent_name,
                offer_key=p.offer_key,
                instance_type=p.instance_type,
                spot=p.instance.spot,
                slots=p.slots,
                price_per_hour=p.price_per_hour,
                launched_at=min(_utc(p.instance.launch_time), now),
                ended_at=None,
            )
        )
    for ended, value in ((changes.ended, now), (changes.reopened, None)):
        if ended:
            await session.execute(
                update(ProvisionerInstance)
                .where(
                    ProvisionerInstance.pool == pool,
                    ProvisionerInstance.instance_id.in_(list(ended)),
                )
                .values(ended_at=value)
            )
    return changes


def _utc(when: datetime) -> datetime:
    """Clouds give zoned launch times; a test fake's naive one is read as UTC."""
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
