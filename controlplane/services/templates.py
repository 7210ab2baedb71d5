"""Configuration templates (merged under experiment configs at submission)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Template, User, Workspace
from controlplane.domain import limits
from controlplane.domain.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from controlplane.services.rbac_scopes import check_placement, in_workspaces

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$")


def _check(name: str, config: Any) -> None:
    if not _NAME.match(name):
        raise InvalidArgument(
            f"invalid template name '{name}': use 1-255 letters, digits, '_', '.' or '-'"
        )
    if not isinstance(config, dict):
        raise InvalidArgument("a template's config must be a mapping")
    limits.check_json_size("the template's config", config, limits.CONFIG_BYTES)


def can_change(user: User, tpl: Template) -> None:
    """Everyone may read and use every template; only its owner or an admin may change it."""
    if not (user.admin or (tpl.owner_id is not None and user.id == tpl.owner_id)):
        raise PermissionDenied(f"only the owner of template '{tpl.name}' or an admin may change it")


async def get_template(session: AsyncSession, name: str) -> Template:
    tpl = await session.get(Template, name)
    if tpl is None:
        raise NotFound(f"template '{name}' not found")
    return tpl


async def _workspace(session: AsyncSession, workspace_id: int) -> int:
    workspace_id = workspace_id or 1
    if await session.get(Workspace, workspace_id) is None:
        raise NotFound(f"workspace {workspace_id} not found")
    check_placement(session, workspace_id)  # RBAC: the workspace it lands in, default or named
    return workspace_id


async def create_template(
    session: AsyncSession, user: User, name: str, config: Any, workspace_id: int, now: datetime
) -> Template:
    _check(name, config)
    if await session.get(Template, name) is not None:
        raise Conflict(f"template '{name}' already exists")
    tpl = Template(
        name=name,
        config=config,
        workspace_id=await _workspace(session, workspace_id),
        owner_id=user.id,
        created_at=now,
        modified_at=now,
    )
    session.add(tpl)
    await session.flush()
    return tpl


async def replace_config(
    session: AsyncSession, user: User, name: str, config: Any, now: datetime
) -> Template:
    tpl = await get_template(session, name)
    can_change(user, tpl)
    _check(name, config)
    tpl.config = config
    tpl.modified_at = now
    return tpl


async def put_template(
    session: AsyncSession, user: User, name: str, config: Any, workspace_id: int, now: datetime
) -> Template:
    """Determined's PutTemplate: create it, or replace the config of one the caller may change."""
    if await session.get(Template, name) is None:
        return await create_template(session, user, name, config, workspace_id, now)
    return await replace_config(session, user, name, config, now)


async def rename_template(
    session: AsyncSession, user: User, old: str, new: str, now: datetime
) -> Template:
    tpl = await get_template(session, old)
    can_change(user, tpl)
    _check(new, tpl.config)
    if new == old:
        return tpl
    if await session.get(Template, new) is not None:
        raise Conflict(f"template '{new}' already exists")
    renamed = Template(
        name=new,
        config=tpl.config,
        workspace_id=tpl.workspace_id,
        owner_id=tpl.owner_id,
        created_at=tpl.created_at,
        modified_at=now,
    )
    await session.delete(tpl)
    await session.flush()
    session.add(renamed)
    await session.flush()
    return renamed


async def delete_template(session: AsyncSession, user: User, name: str) -> None:
    tpl = await get_template(session, name)
    can_change(user, tpl)
    await session.delete(tpl)


async def list_templates(
    session: AsyncSession,
    *,
    name: str | None,
    workspace_ids: tuple[int, ...],
    descending: bool,
    offset: int,
    limit: int,
    workspaces: frozenset[int] | None = None,
) -> tuple[list[Template], int]:
    """`workspaces`: under RBAC, those the caller may view (None: every workspace)."""
    base = select(Template).where(in_workspaces(Template.workspace_id, workspaces))
    if name:
        base = base.where(Template.name.contains(name, autoescape=True))
    if workspace_ids:
        base = base.where(Template.workspace_id.in_(workspace_ids))
    total = await session.scalar(select(func.count()).select_from(base.subquery())) or 0
    query = base.order_by(Template.name.desc() if descending else Template.name).offset(offset)
    if limit > 0:
        query = query.limit(limit)
    return list(await session.scalars(query)), total
