"""What the web UI remembers per user: settings (`/api/v1/users/setting`), recently opened
projects (`/api/v1/users/activity`, `/api/v1/user/projects/activity`) and pinned workspaces
(`/api/v1/workspaces/{id}/pin|unpin`). Each acts on the caller's own record only."""

from __future__ import annotations

from typing import Annotated

from litestar import get, post
from litestar.params import JSONBody, Parameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.preferences import (
    PostUserActivityRequest,
    PostUserSettingRequest,
    ProjectsByActivityResponse,
    UserSettingsResponse,
    UserWebSetting,
)
from controlplane.api.schemas.reports import Empty
from controlplane.api.workspaces import project_out
from controlplane.db.models import Project
from controlplane.domain.rbac import Permission as P
from controlplane.services import user_preferences as prefs
from controlplane.services.rbac_scopes import in_workspaces

_WS = "/api/v1/workspaces/{workspace_id:int}"


@get("/api/v1/users/setting")
async def get_settings(db: Db, principal: Caller) -> UserSettingsResponse:
    rows = await prefs.settings(db, principal.user.id)
    return UserSettingsResponse(
        settings=[
            UserWebSetting(key=s.key, value=s.value, storage_path=s.storage_path) for s in rows
        ]
    )


@post("/api/v1/users/setting", status_code=200)
async def post_settings(data: JSONBody[PostUserSettingRequest], db: Db, principal: Caller) -> Empty:
    given = [prefs.Setting(s.key, s.value or "", s.storage_path or "") for s in data.settings]
    await prefs.put_settings(db, principal.user.id, given)
    return Empty()


@post("/api/v1/users/setting/reset", status_code=200)
async def reset_settings(db: Db, principal: Caller) -> Empty:
    await prefs.reset_settings(db, principal.user.id)
    return Empty()


@post("/api/v1/users/activity", status_code=200)
async def post_activity(
    data: JSONBody[PostUserActivityRequest], db: Db, principal: Caller, ctx: Ctx
) -> Empty:
    await prefs.opened_project(db, principal.user.id, data.entity_id, ctx.clock())
    return Empty()


@get("/api/v1/user/projects/activity")
async def recent_projects(
    db: Db, principal: Caller, limit: Annotated[int, Parameter(ge=0, le=100)] = 5
) -> ProjectsByActivityResponse:
    visible = in_workspaces(Project.workspace_id, principal.workspaces(P.VIEW_PROJECT))
    rows = await prefs.recent_projects(db, principal.user.id, limit or 5, visible)
    return ProjectsByActivityResponse(projects=[await project_out(db, p) for p in rows])


@post(_WS + "/pin", status_code=200)
async def pin_workspace(db: Db, principal: Caller, ctx: Ctx, workspace_id: Id32) -> Empty:
    await prefs.pin(db, principal.user.id, workspace_id, ctx.clock())
    return Empty()


@post(_WS + "/unpin", status_code=200)
async def unpin_workspace(db: Db, principal: Caller, workspace_id: Id32) -> Empty:
    await prefs.unpin(db, principal.user.id, workspace_id)
    return Empty()


ROUTES = [
    get_settings,
    post_settings,
    reset_settings,
    post_activity,
    recent_projects,
    pin_workspace,
    unpin_workspace,
]
