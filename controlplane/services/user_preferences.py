"""What the web UI remembers per user: settings, pinned workspaces, recently opened projects."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Project, ProjectActivity, UserSetting, Workspace, WorkspacePin
from controlplane.domain.errors import InvalidArgument, NotFound

MAX_SETTINGS = 1000  # keys a user may keep; the UI keeps a few dozen
MAX_VALUE_CHARS = 64 * 1024


@dataclass(frozen=True)
class Setting:
    key: str
    value: str
    storage_path: str = ""


def _clean(text: str, what: str, limit: int) -> str:
    if "\x00" in text or len(text) > limit:
        raise InvalidArgument(f"a setting's {what} is at most {limit} characters, without NUL")
    return text


async def settings(session: AsyncSession, user_id: int) -> list[Setting]:
    rows = await session.scalars(
        select(UserSetting)
        .where(UserSetting.user_id == user_id)
        .order_by(UserSetting.storage_path, UserSetting.key)
    )
    return [Setting(r.key, r.value, r.storage_path) for r in rows]


async def put_settings(session: AsyncSession, user_id: int, given: Sequence[Setting]) -> None:
    """Set each key (an empty value removes it), as Determined's PostUserSetting does."""
    for s in given:
        path = _clean(s.storage_path, "storage path", 255)
        key = _clean(s.key, "key", 255)
        value = _clean(s.value, "value", MAX_VALUE_CHARS)
        if not key:
            raise InvalidArgument("a setting needs a key")
        row = await session.get(UserSetting, (user_id, path, key))
        if not value:
            if row is not None:
                await session.delete(row)
        elif row is None:
            session.add(UserSetting(user_id=user_id, storage_path=path, key=key, value=value))
        else:
            row.value = value
    await session.flush()
    count = len(await settings(session, user_id))
    if count > MAX_SETTINGS:
        raise InvalidArgument(f"a user keeps at most {MAX_SETTINGS} settings")


async def reset_settings(session: AsyncSession, user_id: int) -> None:
    await session.execute(delete(UserSetting).where(UserSetting.user_id == user_id))


async def pin(session: AsyncSession, user_id: int, workspace_id: int, now: datetime) -> None:
    if await session.get(Workspace, workspace_id) is None:
        raise NotFound(f"workspace {workspace_id} not found")
    if await session.get(WorkspacePin, (user_id, workspace_id)) is None:
        session.add(WorkspacePin(user_id=user_id, workspace_id=workspace_id, pinned_at=now))
        await session.flush()


async def unpin(session: AsyncSession, user_id: int, workspace_id: int) -> None:
    if await session.get(Workspace, workspace_id) is None:
        raise NotFound(f"workspace {workspace_id} not found")
    await session.execute(
        delete(WorkspacePin).where(
            WorkspacePin.user_id == user_id, WorkspacePin.workspace_id == workspace_id
        )
    )


async def pins(session: AsyncSession, user_id: int) -> dict[int, datetime]:
    rows = await session.execute(
        select(WorkspacePin.workspace_id, WorkspacePin.pinned_at).where(
            WorkspacePin.user_id == user_id
        )
    )
    return {workspace_id: at for workspace_id, at in rows}


async def opened_project(
    session: AsyncSession, user_id: int, project_id: int, now: datetime
) -> None:
    if await session.get(Project, project_id) is None:
        raise NotFound(f"project {project_id} not found")
    row = await session.get(ProjectActivity, (user_id, project_id))
    if row is None:
        session.add(ProjectActivity(user_id=user_id, project_id=project_id, at=now))
    else:
        row.at = now
    await session.flush()


async def recent_projects(
    session: AsyncSession, user_id: int, limit: int, visible: ColumnElement[bool]
) -> list[Project]:
    """The projects `user_id` opened last, newest first, among those `visible` to them now."""
    rows = await session.scalars(
        select(Project)
        .join(ProjectActivity, ProjectActivity.project_id == Project.id)
        .where(ProjectActivity.user_id == user_id, visible)
        .order_by(ProjectActivity.at.desc(), Project.id)
        .limit(limit)
    )
    return list(rows)
