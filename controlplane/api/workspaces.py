"""Workspaces: `/api/v1/workspaces…` (Determined's paths and shapes), and how rows go out.

The default workspace and project (`Uncategorized`) exist from the start and cannot be changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from litestar import delete, get, patch, post
from litestar.params import FromQuery, JSONBody, Parameter, QueryParameter
from sqlalchemy import func, select

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32, Limit, Offset, OrderBy, check_ids, clamp_limit, is_desc
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.reports import Empty
from controlplane.api.schemas.workspaces import (
    DeleteResponse,
    PatchWorkspaceRequest,
    PostProjectRequest,
    PostWorkspaceRequest,
    PostWorkspaceResponse,
    ProjectOut,
    ProjectResponse,
    ProjectsResponse,
    WorkspaceOut,
    WorkspaceResponse,
    WorkspacesResponse,
)
from controlplane.api.workspace_pools import pool_names
from controlplane.db.models import Experiment, Project, User, Workspace
from controlplane.domain import limits
from controlplane.domain.deletion import DeleteState
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.rbac import Permission as P
from controlplane.services import deletions, user_preferences, workspace_pools
from controlplane.services import workspaces as service
from controlplane.services.rbac_scopes import in_workspaces
from controlplane.services.workspaces import ProjectFields, WorkspaceFields

Text = Annotated[str | None, Parameter(max_length=limits.SHORT_NAME_CHARS)]
StrList = Annotated[list[str] | None, Parameter()]
_WS = "/api/v1/workspaces/{workspace_id:int}"


async def workspace_out(db: Db, ws: Workspace, pinned_at: datetime | None = None) -> WorkspaceOut:
    """`pinned_at`: when the caller pinned it (pins are per user), None if not pinned."""
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
        pinned=pinned_at is not None,
        pinned_at=pinned_at,
        num_experiments=exps or 0,
        state=DeleteState(ws.state).wire,
        error_message=ws.error_message or "",
        checkpoint_storage_config=ws.checkpoint_storage_config,
        default_compute_pool=ws.default_compute_pool,
        default_aux_pool=ws.default_aux_pool,
        slot_quotas=await workspace_pools.quotas_of(db, ws.id),
    )


async def project_out(db: Db, p: Project) -> ProjectOut:
    total = await db.scalar(select(func.count()).where(Experiment.project_id == p.id)) or 0
    active = await db.scalar(
        select(func.count()).where(Experiment.project_id == p.id, Experiment.state == "ACTIVE")
    )
    owner = await db.get(User, p.user_id)
    ws = await db.get(Workspace, p.workspace_id)
    return ProjectOut(
        id=p.id,
        name=p.name,
        key=p.key,
        workspace_id=p.workspace_id,
        workspace_name=ws.name if ws else "",
        description=p.description,
        archived=p.archived,
        immutable=p.immutable,
        num_experiments=total,
        num_active_experiments=active or 0,
        username=owner.username if owner else "",
        user_id=p.user_id,
        state=DeleteState(p.state).wire,
        error_message=p.error_message or "",
        notes=list(p.notes or []),
    )


def _page(rows: list[Any], offset: int, limit: int) -> tuple[list[Any], int]:
    page = clamp_limit(limit)
    return (rows[offset:] if page < 0 else rows[offset : offset + page]), page


@get("/api/v1/workspaces")
async def list_workspaces(
    db: Db,
    principal: Caller,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    sort_by: Annotated[
        str, QueryParameter(name="sortBy", pattern="^SORT_BY_(UNSPECIFIED|ID|NAME)$")
    ] = "SORT_BY_UNSPECIFIED",
    name: Text = None,
    name_case_sensitive: Annotated[
        str | None,
        QueryParameter(name="nameCaseSensitive", max_length=limits.SHORT_NAME_CHARS),
    ] = None,
    archived: FromQuery[bool | None] = None,
    users: StrList = None,
    user_ids: Annotated[list[int] | None, QueryParameter(name="userIds")] = None,
    pinned: FromQuery[bool | None] = None,
) -> WorkspacesResponse:
    check_ids(*(user_ids or []))
    pins = await user_preferences.pins(db, principal.user.id)
    column = Workspace.name if sort_by == "SORT_BY_NAME" else Workspace.id
    query = select(Workspace).order_by(column.desc() if is_desc(order_by) else column)
    if name:
        query = query.where(func.lower(Workspace.name) == name.lower())
    if name_case_sensitive:
        query = query.where(Workspace.name == name_case_sensitive)
    if archived is not None:
        query = query.where(Workspace.archived == archived)
    if user_ids:
        query = query.where(Workspace.user_id.in_(user_ids))
    if users:
        query = query.where(Workspace.user_id.in_(select(User.id).where(User.username.in_(users))))
    query = query.where(in_workspaces(Workspace.id, principal.workspaces(P.VIEW_WORKSPACE)))
    rows = list(await db.scalars(query))
    if pinned is not None:
        rows = [w for w in rows if (w.id in pins) == pinned]
    chunk, page = _page(rows, offset, limit)
    return WorkspacesResponse(
        workspaces=[await workspace_out(db, w, pins.get(w.id)) for w in chunk],
        pagination=Pagination.of(offset, page, len(chunk), len(rows)),
    )


@post("/api/v1/workspaces", status_code=200)
async def create_workspace(
    data: JSONBody[PostWorkspaceRequest], db: Db, principal: Caller, ctx: Ctx
) -> PostWorkspaceResponse:
    if problem := data.unsupported():
        raise InvalidArgument(problem)
    fields = WorkspaceFields(
        name=data.name,
        checkpoint_storage_config=data.checkpoint_storage_config,
        default_compute_pool=data.default_compute_pool,
        default_aux_pool=data.default_aux_pool,
    )
    ws = await service.create_workspace(db, principal.user, fields, ctx.clock())
    pools = pool_names(ctx.scheduling)
    await workspace_pools.check_defaults(db, ws, pools)
    await workspace_pools.set_quotas(db, principal.user, ws, data.slot_quotas or {}, pools)
    return PostWorkspaceResponse(workspace=await workspace_out(db, ws))


@get(_WS)
async def get_workspace(db: Db, principal: Caller, workspace_id: Id32) -> WorkspaceResponse:
    ws = await service.get_workspace(db, workspace_id)
    pins = await user_preferences.pins(db, principal.user.id)
    return WorkspaceResponse(workspace=await workspace_out(db, ws, pins.get(ws.id)))


@patch(_WS)
async def patch_workspace(
    data: JSONBody[PatchWorkspaceRequest], db: Db, principal: Caller, ctx: Ctx, workspace_id: Id32
) -> WorkspaceResponse:
    if problem := data.unsupported():
        raise InvalidArgument(problem)
    ws = await service.get_workspace(db, workspace_id)
    fields = WorkspaceFields(
        name=data.name,
        checkpoint_storage_config=data.checkpoint_storage_config,
        default_compute_pool=data.default_compute_pool or data.default_compute_resource_pool,
        default_aux_pool=data.default_aux_pool or data.default_aux_resource_pool,
    )
    await service.patch_workspace(db, principal.user, ws, fields)
    pools = pool_names(ctx.scheduling)
    if fields.default_compute_pool or fields.default_aux_pool:
        await workspace_pools.check_defaults(db, ws, pools)
    await workspace_pools.set_quotas(db, principal.user, ws, data.slot_quotas or {}, pools)
    pins = await user_preferences.pins(db, principal.user.id)
    return WorkspaceResponse(workspace=await workspace_out(db, ws, pins.get(ws.id)))


@delete(_WS, status_code=200)
async def delete_workspace(
    db: Db, principal: Caller, ctx: Ctx, workspace_id: Id32
) -> DeleteResponse:
    """Determined's DeleteWorkspace: an empty workspace goes at once (`completed`); else it is
    DELETING until its projects and experiments are gone (GET shows the state, and the reason
    when it is DELETE_FAILED)."""
    ws = await service.get_workspace(db, workspace_id)
    completed = await deletions.begin_workspace_deletion(db, principal.user, ws)
    await db.commit()
    if not completed and ctx.periodic is not None:
        ctx.periodic.wake_gc()
    return DeleteResponse(completed=completed)


def _archiver(path: str, archived: bool):  # type: ignore[no-untyped-def]
    @post(path, status_code=200)
    async def handler(db: Db, principal: Caller, workspace_id: Id32) -> Empty:
        ws = await service.get_workspace(db, workspace_id)
        service.set_workspace_archived(principal.user, ws, archived)
        return Empty()

    return handler


archive_workspace = _archiver(_WS + "/archive", True)
unarchive_workspace = _archiver(_WS + "/unarchive", False)


@get(_WS + "/projects")
async def workspace_projects(
    db: Db,
    principal: Caller,
    workspace_id: Id32,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    sort_by: Annotated[str, QueryParameter(name="sortBy")] = "SORT_BY_UNSPECIFIED",
    name: Text = None,
    archived: FromQuery[bool | None] = None,
    users: StrList = None,
    user_ids: Annotated[list[int] | None, QueryParameter(name="userIds")] = None,
) -> ProjectsResponse:
    check_ids(*(user_ids or []))
    await service.get_workspace(db, workspace_id)
    column = {"SORT_BY_NAME": Project.name, "SORT_BY_DESCRIPTION": Project.description}.get(
        sort_by, Project.id
    )
    query = (
        select(Project)
        .where(Project.workspace_id == workspace_id)
        .order_by(column.desc() if is_desc(order_by) else column, Project.id)
    )
    # Exact: `det project …` takes the first project this returns for a name.
    if name:
        query = query.where(Project.name == name)
    if archived is not None:
        query = query.where(Project.archived == archived)
    if user_ids:
        query = query.where(Project.user_id.in_(user_ids))
    if users:
        query = query.where(Project.user_id.in_(select(User.id).where(User.username.in_(users))))
    rows = list(await db.scalars(query))
    chunk, page = _page(rows, offset, limit)
    return ProjectsResponse(
        projects=[await project_out(db, p) for p in chunk],
        pagination=Pagination.of(offset, page, len(chunk), len(rows)),
    )


@post(_WS + "/projects", status_code=200)
async def create_project(
    data: JSONBody[PostProjectRequest], db: Db, principal: Caller, ctx: Ctx, workspace_id: Id32
) -> ProjectResponse:
    if data.workspace_id not in (None, 0, workspace_id):
        raise InvalidArgument(
            f"body workspaceId {data.workspace_id} does not match the path's {workspace_id}"
        )
    ws = await service.get_workspace(db, workspace_id)
    fields = ProjectFields(name=data.name, description=data.description, key=data.key)
    project = await service.create_project(db, principal.user, ws, fields, ctx.clock())
    return ProjectResponse(project=await project_out(db, project))


ROUTES = [
    list_workspaces,
    create_workspace,
    get_workspace,
    patch_workspace,
    delete_workspace,
    archive_workspace,
    unarchive_workspace,
    workspace_projects,
    create_project,
]
