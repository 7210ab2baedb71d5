"""User administration: create, list, change password, (de)activate."""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import User
from controlplane.domain.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from controlplane.services import auth

_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")


def require_admin(user: User) -> None:
    if not user.admin:
        raise PermissionDenied("only an admin may do this")


async def get_user(session: AsyncSession, user_id: int) -> User:
    user = await session.get(User, user_id)
    if user is None:
        raise NotFound(f"user {user_id} not found")
    return user


async def get_user_by_name(session: AsyncSession, username: str) -> User:
    user = await session.scalar(select(User).where(User.username == username))
    if user is None:
        raise NotFound(f"user '{username}' not found")
    return user


async def create_user(
    session: AsyncSession,
    *,
    username: str,
    hashed_password: str,
    admin: bool,
    active: bool,
    display_name: str | None,
    allow_empty_password: bool,
    now: datetime,
) -> User:
    if not _USERNAME.match(username):
        raise InvalidArgument(
            f"invalid username '{username}': use 1-128 letters, digits, '_', '.', '@' or '-'"
        )
    auth.check_password_allowed(hashed_password, allow_empty=allow_empty_password)
    user = User(
        username=username,
        display_name=display_name,
        password_hash=auth.hash_password(hashed_password),
        admin=admin,
        active=active,
        created_at=now,
        modified_at=now,
    )
    session.add(user)
    try:
        async with session.begin_nested():
            await session.flush()
    except IntegrityError as exc:
        raise Conflict(f"user '{username}' already exists") from exc
    return user


def refuse_remote(remote: bool | None) -> None:
    """Determined's remote users log in only through SSO (its enterprise edition)."""
    if remote:
        raise InvalidArgument(
            "remote users log in only through SSO, which this cluster does not have"
        )


async def _rename(session: AsyncSession, target: User, username: str) -> None:
    if not _USERNAME.match(username):
        raise InvalidArgument(
            f"invalid username '{username}': use 1-128 letters, digits, '_', '.', '@' or '-'"
        )
    taken = await session.scalar(select(User.id).where(User.username == username))
    if taken is not None:
        raise Conflict(f"user '{username}' already exists")
    target.username = username


async def list_users(session: AsyncSession, *, offset: int, limit: int) -> tuple[list[User], int]:
    total = await session.scalar(select(func.count()).select_from(User)) or 0
    query = select(User).order_by(User.id).offset(offset)
    if limit > 0:
        query = query.limit(limit)
    return list(await session.scalars(query)), total


async def set_password(
    session: AsyncSession,
    actor: User,
    target: User,
    hashed_password: str,
    *,
    allow_empty: bool,
    now: datetime,
) -> None:
    if actor.id != target.id:
        require_admin(actor)
    auth.check_password_allowed(hashed_password, allow_empty=allow_empty)
    target.password_hash = auth.hash_password(hashed_password)
    target.modified_at = now
    await auth.revoke_sessions(session, target.id)


async def update_user(
    session: AsyncSession,
    actor: User,
    target: User,
    *,
    active: bool | None,
    admin: bool | None,
    display_name: str | None,
    now: datetime,
    username: str | None = None,
    remote: bool | None = None,
) -> None:
    """Admin-only flags and renames; a user may change only their own display name."""
    admin_only = (active, admin, username, remote)
    if any(v is not None for v in admin_only) or actor.id != target.id:
        require_admin(actor)
    refuse_remote(remote)
    if username is not None and username != target.username:
        await _rename(session, target, username)
    if actor.id == target.id and (active is False or admin is False):
        raise InvalidArgument("an admin cannot deactivate or demote themselves")
    if active is not None:
        target.active = active
        if not active:
            await auth.revoke_sessions(session, target.id)
    if admin is not None:
        target.admin = admin
    if display_name is not None:
        target.display_name = display_name
    target.modified_at = now


async def matching_ids(session: AsyncSession, *, name: str | None, admin: bool | None) -> list[int]:
    """The users a bulk change's filters select: by name (contained, any case) and admin flag."""
    query = select(User.id).order_by(User.id)
    if name:
        query = query.where(func.lower(User.username).contains(name.lower(), autoescape=True))
    if admin is not None:
        query = query.where(User.admin == admin)
    return list(await session.scalars(query))
