"""Access tokens in the store: made, listed and patched (the rules: domain/access_tokens.py)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import User, UserSession
from controlplane.domain import access_tokens as rules
from controlplane.domain.errors import NotFound
from controlplane.services.auth import token_digest


@dataclass(frozen=True)
class Made:
    token: str
    token_id: int


async def create(
    session: AsyncSession,
    actor: User,
    user_id: int,
    *,
    lifespan: str | None,
    description: str | None,
    now: datetime,
) -> Made:
    owner = await session.get(User, user_id)
    if owner is None:
        raise NotFound(f"user {user_id} not found")
    rules.may_manage(rules.Actor(actor.id, actor.admin), owner.id)
    span = rules.lifespan(lifespan)
    token = secrets.token_urlsafe(32)
    row = UserSession(
        user_id=owner.id,
        token_hash=token_digest(token),
        created_at=now,
        expires_at=now + span,
        token_type=rules.ACCESS,
        description=rules.description(description),
    )
    session.add(row)
    await session.flush()
    return Made(token=token, token_id=row.id)


async def listed(
    session: AsyncSession,
    actor: User,
    *,
    username: str | None,
    token_ids: tuple[int, ...],
    show_inactive: bool,
    descending: bool,
    now: datetime,
) -> list[UserSession]:
    """The access tokens `actor` may see: their own, or everyone's (or `username`'s) for an
    admin; active ones only unless `show_inactive`."""
    query = select(UserSession).where(UserSession.token_type == rules.ACCESS)
    if username:
        owner = await session.scalar(select(User.id).where(User.username == username))
        if owner is None:
            raise NotFound(f"user '{username}' not found")
        rules.may_manage(rules.Actor(actor.id, actor.admin), owner)
        query = query.where(UserSession.user_id == owner)
    elif not actor.admin:
        query = query.where(UserSession.user_id == actor.id)
    if not show_inactive:
        query = query.where(UserSession.expires_at > now, UserSession.revoked_at.is_(None))
    if token_ids:
        query = query.where(or_(*(UserSession.id == t for t in token_ids)))
    order = UserSession.id.desc() if descending else UserSession.id
    rows = list(await session.scalars(query.order_by(order)))
    if not actor.admin:
        rows = [r for r in rows if r.user_id == actor.id]
    return rows


async def patch(
    session: AsyncSession,
    actor: User,
    token_id: int,
    *,
    description: str | None,
    revoke: bool | None,
    now: datetime,
) -> UserSession:
    row = await session.get(UserSession, token_id)
    if row is None or row.token_type != rules.ACCESS:
        raise NotFound(f"Token with id: {{{token_id}}} not found")
    # Another user's token: 403, as Determined answers (token ids are sequential anyway).
    rules.may_manage(rules.Actor(actor.id, actor.admin), row.user_id)
    if description is not None:
        row.description = rules.description(description)
    if revoke and row.revoked_at is None:
        row.revoked_at = now
    await session.flush()
    return row
