"""The audit log: who changed users, groups, roles, pools and other users' objects.

The API decides which requests are recorded (api/access.py `audit_intent`) and leaves an
`Intent` on the request's session; the session writes the entry in the same transaction as the
change when the request succeeds, or in one of its own after the rollback when it was refused
or failed (api/deps.py). Reading it is for admins only (`GET /api/v1/master/audit`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import AuditEntry

INTENT = "audit_intent"  # session.info key


@dataclass
class Intent:
    actor_id: int
    actor: str
    method: str
    route: str
    path: str
    targets: dict[str, Any] = field(default_factory=dict)
    client_address: str | None = None
    status: int | None = None  # set when the request was refused before its handler ran


def intend(session: AsyncSession, intent: Intent) -> None:
    session.info[INTENT] = intent


def note(session: AsyncSession, **targets: Any) -> None:
    """Adds what a handler learnt (ids from the body) to the entry of this request."""
    intent = session.info.get(INTENT)
    if isinstance(intent, Intent):
        intent.targets.update({k: v for k, v in targets.items() if v not in (None, [], {})})


def take(session: AsyncSession) -> Intent | None:
    intent = session.info.pop(INTENT, None)
    return intent if isinstance(intent, Intent) else None


def _storable(value: Any) -> Any:
    """The value with every NUL made U+FFFD: a hostile path may carry one, and PostgreSQL's text
    and JSONB refuse it (the refused request must still be recorded, not become a 500)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_storable(v) for v in value]
    return value


def record(
    session: AsyncSession, intent: Intent, *, outcome: str, status: int, at: datetime
) -> None:
    session.add(
        AuditEntry(
            at=at,
            actor_id=intent.actor_id,
            actor=intent.actor,
            method=intent.method,
            route=intent.route,
            path=_storable(intent.path[:2048]),
            targets=_storable(intent.targets),
            outcome=outcome,
            status=status,
            client_address=intent.client_address,
        )
    )


async def entries(
    session: AsyncSession,
    *,
    actor: str | None,
    action: str | None,
    since: datetime | None,
    offset: int,
    limit: int,
) -> tuple[list[AuditEntry], int]:
    """Newest first. `action` matches "METHOD", a route's path template, or "METHOD route"."""
    query = select(AuditEntry)
    if actor:
        query = query.where(AuditEntry.actor == actor)
    if action:
        method, _, route = action.partition(" ")
        if route:
            query = query.where(AuditEntry.method == method.upper(), AuditEntry.route == route)
        elif action.startswith("/"):
            query = query.where(AuditEntry.route == action)
        else:
            query = query.where(AuditEntry.method == action.upper())
    if since is not None:
        query = query.where(AuditEntry.at >= since)
    total = await session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = await session.scalars(
        query.order_by(AuditEntry.at.desc(), AuditEntry.id.desc()).offset(offset).limit(limit)
    )
    return list(rows), total
