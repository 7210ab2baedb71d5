"""The cluster message in the store: one at a time; setting a new one replaces the old."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import ClusterMessage
from controlplane.domain import cluster_message as rules


async def put(
    session: AsyncSession, user_id: int, window: rules.Window, now: datetime
) -> ClusterMessage:
    await session.execute(delete(ClusterMessage))
    row = ClusterMessage(
        created_by=user_id,
        message=window.message,
        start_time=window.start,
        end_time=window.end,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def clear(session: AsyncSession) -> None:
    await session.execute(delete(ClusterMessage))


async def current(session: AsyncSession, now: datetime, *, showing: bool) -> ClusterMessage | None:
    row = await session.scalar(select(ClusterMessage).order_by(ClusterMessage.id.desc()).limit(1))
    if row is None:
        return None
    window = rules.Window(row.message, row.start_time, row.end_time)
    keep = rules.is_showing(window, now) if showing else rules.is_current(window, now)
    return row if keep else None
