"""Reads for GET /api/v1/experiment/labels: each visible experiment's labels."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Experiment
from controlplane.services.rbac_scopes import experiments_in


async def labels_in_use(
    session: AsyncSession, *, project_id: int | None, workspaces: frozenset[int] | None
) -> list[list[str]]:
    """The labels of every experiment (of `project_id` when given) in `workspaces` (None:
    all); experiments without labels are left out."""
    query = select(Experiment.labels).where(experiments_in(workspaces))
    if project_id is not None:
        query = query.where(Experiment.project_id == project_id)
    return [list(labels) for labels in await session.scalars(query) if labels]
