"""Workspaces and projects (read side; a default workspace and project exist from the start)."""

from __future__ import annotations

from typing import Annotated

from litestar import get
from litestar.params import Parameter
from sqlalchemy import func, select

from controlplane.api.deps import Caller, Db
from controlplane.api.params import Id32, Limit, Offset, clamp_limit
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.workspaces import (
    ProjectOut,
    ProjectResponse,
    ProjectsResponse,
    WorkspaceOut,
    WorkspaceResponse,
    WorkspacesResponse,
)
from controlplane.db.models import Experiment, Project, User, Workspace
from controlplane.domain.errors import NotFound


async def _workspace_out(db: Db, ws: Workspace) -> WorkspaceOut:
    projects = await db.scalar(select(func.count()).where(Project.workspace_id == ws.id)) or 0
    exps = await db.scalar(
        select(func.count(Experiment.id))
        .join(Project, Project.id == Experiment.project_id)
        .where(Project.workspace_id == ws.id)
    )
    owner = await db.get(User, ws.user_id)
    return WorkspaceOut(
        id=ws.id,
        name=ws.name,
        archived=ws.archived,
        username=owner.username if owner else "",
        user_id=ws.user_id,
        immutable=ws.immutable,
        num_projects=projects,
        num_experiments=exps or 0,
    )


async def _project_out(db: Db, p: Project) -> ProjectOut:
    total = await db.scalar(select(func.count()).where(Experiment.project_id == p.id)) or 0
    active = await db.scalar(
        select(func.count()).where(Experiment.project_id == p.id, Experiment.state == "ACTIVE")
    )
    owner = await db.get(User, p.user_id)
    return ProjectOut(
        id=p.id,
        name=p.name,
        key=p.key,
        workspace_id=p.workspace_id,
        description=p.description,
        archived=p.archived,
        immutable=p.immutable,
        num_experiments=total,
        num_active_experiments=active or 0,
        username=owner.username if owner else "",
        user_id=p.user_id,
    )


@get("/api/v1/workspaces")
async def list_workspaces(
    db: Db,
    principal: Caller,
    offset: Offset = 0,
    limit: Limit = 0,
    name: Annotated[str | None, Parameter(max_length=255)] = None,
) -> WorkspacesResponse:
    query = select(Workspace).order_by(Workspace.id)
    if name:
        query = query.where(Workspace.name == name)
    rows = list(await db.scalars(query))
    page = clamp_limit(limit)
    chunk = rows[offset:] if page < 0 else rows[offset : offset + page]
    return WorkspacesResponse(
        workspaces=[await _workspace_out(db, w) for w in chunk],
        pagination=Pagination.of(offset, page, len(chunk), len(rows)),
    )


@get("/api/v1/workspaces/{workspace_id:int}")
async def get_workspace(db: Db, principal: Caller, workspace_id: Id32) -> WorkspaceResponse:
    ws = await db.get(Workspace, workspace_id)
    if ws is None:
        raise NotFound(f"workspace {workspace_id} not found")
    return WorkspaceResponse(workspace=await _workspace_out(db, ws))


@get("/api/v1/workspaces/{workspace_id:int}/projects")
async def workspace_projects(
    db: Db, principal: Caller, workspace_id: Id32, offset: Offset = 0, limit: Limit = 0
) -> ProjectsResponse:
    if await db.get(Workspace, workspace_id) is None:
        raise NotFound(f"workspace {workspace_id} not found")
    rows = list(
        await db.scalars(
            select(Project).where(Project.workspace_id == workspace_id).order_by(Project.id)
        )
    )
    page = clamp_limit(limit)
    chunk = rows[offset:] if page < 0 else rows[offset : offset + page]
    return ProjectsResponse(
        projects=[await _project_out(db, p) for p in chunk],
        pagination=Pagination.of(offset, page, len(chunk), len(rows)),
    )


@get("/api/v1/projects/{project_id:int}")
async def get_project(db: Db, principal: Caller, project_id: Id32) -> ProjectResponse:
    p = await db.get(Project, project_id)
    if p is None:
        raise NotFound(f"project {project_id} not found")
    return ProjectResponse(project=await _project_out(db, p))


ROUTES = [list_workspaces, get_workspace, workspace_projects, get_project]
