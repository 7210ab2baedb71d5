"""Config policies in the store, and their effect on a submission."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import ConfigPolicy, User
from controlplane.domain import config_policies as rules
from controlplane.services.users import require_admin


def _scope(workspace_id: int | None) -> Any:
    if workspace_id is None:
        return ConfigPolicy.workspace_id.is_(None)
    return ConfigPolicy.workspace_id == workspace_id


async def get(
    session: AsyncSession, workspace_id: int | None, workload: str
) -> rules.Policy | None:
    row = await session.scalar(
        select(ConfigPolicy).where(_scope(workspace_id), ConfigPolicy.workload_type == workload)
    )
    return None if row is None else rules.from_mapping(row.policy)


async def put(
    session: AsyncSession,
    user: User,
    workspace_id: int | None,
    workload: str,
    policy: rules.Policy,
    now: datetime,
) -> rules.Policy:
    require_admin(user)
    row = await session.scalar(
        select(ConfigPolicy).where(_scope(workspace_id), ConfigPolicy.workload_type == workload)
    )
    if row is None:
        row = ConfigPolicy(workspace_id=workspace_id, workload_type=workload, updated_at=now)
        session.add(row)
    row.policy = policy.wire()
    row.updated_by = user.id
    row.updated_at = now
    await session.flush()
    return policy


async def remove(
    session: AsyncSession, user: User, workspace_id: int | None, workload: str
) -> None:
    require_admin(user)
    await session.execute(
        delete(ConfigPolicy).where(_scope(workspace_id), ConfigPolicy.workload_type == workload)
    )


async def effective(session: AsyncSession, workspace_id: int, workload: str) -> rules.Policy:
    """The policy a submission to `workspace_id` follows (global over workspace)."""
    rows = await session.scalars(
        select(ConfigPolicy).where(
            ConfigPolicy.workload_type == workload,
            or_(ConfigPolicy.workspace_id.is_(None), ConfigPolicy.workspace_id == workspace_id),
        )
    )
    found = {r.workspace_id: rules.from_mapping(r.policy) for r in rows}
    return rules.effective(found.get(None), found.get(workspace_id))
