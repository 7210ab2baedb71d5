"""User groups and role assignments: reading and changing them, and what a user holds.

The rules (which role grants what, where a role may be assigned) are the pure table in
`controlplane.domain.rbac`; this module reads and writes the rows. Every change marks the
session (`CHANGED`) so the request's session drops the per-process cache of what users hold
once the change is committed (api/deps.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import (
    GroupMember,
    RoleAssignment,
    User,
    UserGroup,
    Workspace,
)
from controlplane.domain import rbac
from controlplane.domain.errors import Conflict, InvalidArgument, NotFound

CHANGED = "rbac_changed"  # session.info key: assignments or memberships changed
_GROUP_NAME = re.compile(r"^\S(.{0,253}\S)?$")


def _changed(session: AsyncSession) -> None:
    session.info[CHANGED] = True


class HeldCache:
    """What each user holds (assignments of its own and of its groups), per process.

    Cleared after any committed change to assignments or memberships made through this
    process. The master runs one API process (DESIGN §7: a cache per worker, invalidated by
    NOTIFY, once there are several).
    """

    def __init__(self, max_users: int = 100_000) -> None:
        self._held: dict[int, tuple[rbac.Assignment, ...]] = {}
        self._max = max_users

    def get(self, user_id: int) -> tuple[rbac.Assignment, ...] | None:
        return self._held.get(user_id)

    def put(self, user_id: int, held: tuple[rbac.Assignment, ...]) -> None:
        if len(self._held) >= self._max:
            self._held.clear()
        self._held[user_id] = held

    def clear(self) -> None:
        self._held.clear()


# One statement: the user's own assignments and those of its groups.
def _held_query(user_id: int):  # type: ignore[no-untyped-def]
    own = select(RoleAssignment.role_id, RoleAssignment.workspace_id).where(
        RoleAssignment.user_id == user_id
    )
    via_groups = (
        select(RoleAssignment.role_id, RoleAssignment.workspace_id)
        .join(GroupMember, GroupMember.group_id == RoleAssignment.group_id)
        .where(GroupMember.user_id == user_id)
    )
    return union_all(own, via_groups)


async def held_by(
    session: AsyncSession, user_id: int, cache: HeldCache | None = None
) -> tuple[rbac.Assignment, ...]:
    if cache is not None and (hit := cache.get(user_id)) is not None:
        return hit
    rows = (await session.execute(_held_query(user_id))).all()
    held = tuple(dict.fromkeys(rbac.Assignment(r, w) for r, w in rows))
    if cache is not None:
        cache.put(user_id, held)
    return held


# --- groups -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupDetails:
    group: UserGroup
    users: list[User]


async def _users(session: AsyncSession, ids: Iterable[int]) -> list[User]:
    wanted = sorted(set(ids))
    if not wanted:
        return []
    users = list(await session.scalars(select(User).where(User.id.in_(wanted))))
    missing = sorted(set(wanted) - {u.id for u in users})
    if missing:
        raise NotFound(f"users not found: {', '.join(map(str, missing))}")
    return users


async def get_group(session: AsyncSession, group_id: int) -> UserGroup:
    group = await session.get(UserGroup, group_id)
    if group is None:
        raise NotFound(f"user group {group_id} not found")
    return group


async def group_details(session: AsyncSession, group_id: int) -> GroupDetails:
    group = await get_group(session, group_id)
    users = await session.scalars(
        select(User)
        .join(GroupMember, GroupMember.user_id == User.id)
        .where(GroupMember.group_id == group_id)
        .order_by(User.id)
    )
    return GroupDetails(group, list(users))


def _check_name(name: str) -> str:
    if not _GROUP_NAME.match(name):
        raise InvalidArgument(
            "a group name is 1-255 characters and does not start or end with white space"
        )
    return name


async def _name_free(session: AsyncSession, name: str) -> None:
    if await session.scalar(select(UserGroup.id).where(UserGroup.name == name)) is not None:
        raise Conflict(f"a user group named {name!r} already exists")


async def create_group(
    session: AsyncSession, name: str, add_users: Sequence[int], now: datetime
) -> GroupDetails:
    await _name_free(session, _check_name(name))
    users = await _users(session, add_users)
    group = UserGroup(name=name, created_at=now)
    session.add(group)
    await session.flush()
    session.add_all(GroupMember(group_id=group.id, user_id=u.id) for u in users)
    await session.flush()
    _changed(session)
    return await group_details(session, group.id)


async def update_group(
    session: AsyncSession,
    group_id: int,
    *,
    name: str | None,
    add_users: Sequence[int],
    remove_users: Sequence[int],
) -> GroupDetails:
    group = await get_group(session, group_id)
    if set(add_users) & set(remove_users):
        raise InvalidArgument("a user cannot be both added to and removed from a group")
    if name is not None and name != group.name:
        await _name_free(session, _check_name(name))
        group.name = name
    await _add_members(session, [group_id], [u.id for u in await _users(session, add_users)])
    await _users(session, remove_users)
    if remove_users:
        await session.execute(
            delete(GroupMember).where(
                GroupMember.group_id == group_id, GroupMember.user_id.in_(list(remove_users))
            )
        )
    await session.flush()
    _changed(session)
    return await group_details(session, group_id)


async def _add_members(session: AsyncSession, group_ids: list[int], user_ids: list[int]) -> None:
    if not group_ids or not user_ids:
        return
    have = set(
        (
            await session.execute(
                select(GroupMember.group_id, GroupMember.user_id).where(
                    GroupMember.group_id.in_(group_ids), GroupMember.user_id.in_(user_ids)
                )
            )
        ).all()
    )
    session.add_all(
        GroupMember(group_id=g, user_id=u)
        for g in group_ids
        for u in user_ids
        if (g, u) not in have
    )
    await session.flush()


async def delete_group(session: AsyncSession, group_id: int) -> None:
    group = await get_group(session, group_id)
    await session.execute(delete(RoleAssignment).where(RoleAssignment.group_id == group_id))
    await session.execute(delete(GroupMember).where(GroupMember.group_id == group_id))
    await session.delete(group)
    await session.flush()
    _changed(session)


async def search_groups(
    session: AsyncSession, *, name: str | None, user_id: int | None, offset: int, limit: int
) -> tuple[list[tuple[UserGroup, int]], int]:
    """Groups (with their member counts) by exact name and/or member; `limit` < 0: all."""
    members = (
        select(GroupMember.group_id, func.count().label("n"))
        .group_by(GroupMember.group_id)
        .subquery()
    )
    query = select(UserGroup, func.coalesce(members.c.n, 0)).outerjoin(
        members, members.c.group_id == UserGroup.id
    )
    if name:
        query = query.where(UserGroup.name == name)
    if user_id is not None:
        query = query.where(
            UserGroup.id.in_(select(GroupMember.group_id).where(GroupMember.user_id == user_id))
        )
    total = await session.scalar(select(func.count()).select_from(query.subquery())) or 0
    query = query.order_by(UserGroup.id).offset(offset)
    if limit >= 0:
        query = query.limit(limit)
    rows = [(g, int(n)) for g, n in (await session.execute(query)).all()]
    return rows, total


async def assign_multiple_groups(
    session: AsyncSession, user_ids: Sequence[int], add: Sequence[int], remove: Sequence[int]
) -> None:
    """Determined's AssignMultipleGroups: every user joins `add` and leaves `remove`."""
    users = [u.id for u in await _users(session, user_ids)]
    for group_id in {*add, *remove}:
        await get_group(session, group_id)
    await _add_members(session, sorted(set(add)), users)
    if remove and users:
        await session.execute(
            delete(GroupMember).where(
                GroupMember.group_id.in_(list(remove)), GroupMember.user_id.in_(users)
            )
        )
    _changed(session)


# --- role assignments ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Grant:
    """One assignment to change: a role to a user or a group, cluster-wide or on a workspace."""

    role_id: int
    workspace_id: int | None
    user_id: int | None = None
    group_id: int | None = None


async def _check_grant(session: AsyncSession, g: Grant) -> None:
    try:
        rbac.check_assignable(g.role_id, g.workspace_id)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from exc
    if g.workspace_id is not None and await session.get(Workspace, g.workspace_id) is None:
        raise NotFound(f"workspace {g.workspace_id} not found")
    if g.user_id is not None:
        await _users(session, [g.user_id])
    if g.group_id is not None:
        await get_group(session, g.group_id)


def _same(g: Grant):  # type: ignore[no-untyped-def]
    return (
        RoleAssignment.role_id == g.role_id,
        (
            RoleAssignment.workspace_id.is_(None)
            if g.workspace_id is None
            else RoleAssignment.workspace_id == g.workspace_id
        ),
        (
            RoleAssignment.user_id.is_(None)
            if g.user_id is None
            else RoleAssignment.user_id == g.user_id
        ),
        (
            RoleAssignment.group_id.is_(None)
            if g.group_id is None
            else RoleAssignment.group_id == g.group_id
        ),
    )


async def add_assignments(session: AsyncSession, grants: Sequence[Grant]) -> None:
    """Adds each grant not held yet (adding one twice is not an error)."""
    for g in grants:
        await _check_grant(session, g)
        if await session.scalar(select(RoleAssignment.id).where(*_same(g))) is None:
            session.add(
                RoleAssignment(
                    role_id=g.role_id,
                    user_id=g.user_id,
                    group_id=g.group_id,
                    workspace_id=g.workspace_id,
                )
            )
            await session.flush()
    _changed(session)


async def remove_assignments(session: AsyncSession, grants: Sequence[Grant]) -> None:
    """Removes each grant; one that is not held is a 404, and nothing is removed."""
    for g in grants:
        result = await session.execute(delete(RoleAssignment).where(*_same(g)))
        if not result.rowcount:  # type: ignore[attr-defined]
            scope = "cluster-wide" if g.workspace_id is None else f"on workspace {g.workspace_id}"
            who = f"user {g.user_id}" if g.user_id is not None else f"group {g.group_id}"
            raise NotFound(f"{who} does not hold role {g.role_id} {scope}")
    _changed(session)


async def assignment_rows(
    session: AsyncSession,
    *,
    role_ids: Iterable[int] | None = None,
    user_id: int | None = None,
    group_id: int | None = None,
    workspace_id: int | None = None,
    with_groups_of_user: bool = False,
) -> list[RoleAssignment]:
    query = select(RoleAssignment).order_by(RoleAssignment.id)
    if role_ids is not None:
        query = query.where(RoleAssignment.role_id.in_(list(role_ids)))
    if workspace_id is not None:
        query = query.where(RoleAssignment.workspace_id == workspace_id)
    if user_id is not None and with_groups_of_user:
        groups = select(GroupMember.group_id).where(GroupMember.user_id == user_id)
        query = query.where(
            (RoleAssignment.user_id == user_id) | RoleAssignment.group_id.in_(groups)
        )
    elif user_id is not None:
        query = query.where(RoleAssignment.user_id == user_id)
    if group_id is not None:
        query = query.where(RoleAssignment.group_id == group_id)
    return list(await session.scalars(query))
