"""The Unix user of a task (its owner's linked agent user, or the default) and user links."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import TaskUser
from controlplane.db.models import Task, User
from controlplane.domain import task_user as rules
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.services.users import require_admin


def linked_of(user: User) -> rules.AgentUserGroup | None:
    if user.agent_uid is None or user.agent_gid is None:
        return None
    return rules.AgentUserGroup(
        uid=user.agent_uid,
        gid=user.agent_gid,
        user=user.agent_user or "",
        group=user.agent_group or "",
    )


def wire_task_user(user: User, default: rules.DefaultTaskUser) -> TaskUser:
    """What the agent is told: the user's Unix user and group (raises TaskUserError)."""
    chosen = rules.task_user(user.id, linked_of(user), default)
    return TaskUser(
        uid=chosen.uid, gid=chosen.gid, user=chosen.user, group=chosen.group, owner=user.username
    )


async def task_user_of(
    session: AsyncSession, task_id: str, default: rules.DefaultTaskUser
) -> TaskUser:
    # The task and its owner in one statement: every placement asks, trivial commands too.
    found = (
        await session.execute(
            select(Task.owner_id, User)
            .outerjoin(User, User.id == Task.owner_id)
            .where(Task.task_id == task_id)
        )
    ).first()
    if found is None:
        raise NotFound(f"task {task_id} not found")
    owner_id, owner = found
    if owner is None:
        raise NotFound(f"the owner of task {task_id} (user {owner_id}) not found")
    return wire_task_user(owner, default)


def link_agent_user(
    actor: User,
    target: User,
    link: rules.AgentUserGroup | None,
    *,
    now: datetime,
) -> None:
    """Admin only: set the user's link, or with None clear it (unlinked again)."""
    require_admin(actor)
    if link is not None:
        try:
            rules.task_user(target.id, link)
        except rules.TaskUserError as exc:
            raise InvalidArgument(str(exc)) from exc
    target.agent_uid = None if link is None else link.uid
    target.agent_gid = None if link is None else link.gid
    target.agent_user = None if link is None else link.user
    target.agent_group = None if link is None else link.group
    target.modified_at = now
