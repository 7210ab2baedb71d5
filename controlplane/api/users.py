"""User administration (admin only, except a user's own password and display name)."""

from __future__ import annotations

from typing import Any

from litestar import get, patch, post
from litestar.params import FromPath, JSONBody

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32, Limit, Offset, clamp_limit
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.users import AgentUserGroup as AgentUserGroupIn
from controlplane.api.schemas.users import (
    CreateUserRequest,
    PatchUserRequest,
    PatchUsersRequest,
    PatchUsersResponse,
    SetPasswordRequest,
    UserActionResult,
    UserResponse,
    UsersResponse,
)
from controlplane.api.serializers import user_out
from controlplane.domain.errors import DomainError, InvalidArgument
from controlplane.domain.task_user import AgentUserGroup
from controlplane.services import auth, task_users, users


@get("/api/v1/users")
async def list_users(
    db: Db, principal: Caller, offset: Offset = 0, limit: Limit = 0
) -> UsersResponse:
    page = clamp_limit(limit)
    rows, total = await users.list_users(db, offset=offset, limit=page)
    return UsersResponse(
        users=[user_out(u) for u in rows],
        pagination=Pagination.of(offset, page, len(rows), total),
    )


@get("/api/v1/users/{user_id:int}")
async def get_user(db: Db, principal: Caller, user_id: Id32) -> UserResponse:
    return UserResponse(user=user_out(await users.get_user(db, user_id)))


@get("/api/v1/users/{username:str}/by-username")
async def get_user_by_name(db: Db, principal: Caller, username: FromPath[str]) -> UserResponse:
    return UserResponse(user=user_out(await users.get_user_by_name(db, username)))


@post("/api/v1/users", status_code=200)
async def create_user(
    data: JSONBody[CreateUserRequest], db: Db, principal: Caller, ctx: Ctx
) -> UserResponse:
    users.require_admin(principal.user)
    users.refuse_remote(data.user.remote)
    password = data.password or ""
    hashed = password if data.is_hashed else auth.client_hash(password)
    user = await users.create_user(
        db,
        username=data.user.username,
        hashed_password=hashed,
        admin=data.user.admin,
        active=data.user.active,
        display_name=data.user.display_name,
        allow_empty_password=ctx.allow_empty_passwords,
        now=ctx.clock(),
    )
    return UserResponse(user=user_out(user))


@patch("/api/v1/users/{user_id:int}")
async def patch_user(
    data: JSONBody[PatchUserRequest], db: Db, principal: Caller, ctx: Ctx, user_id: Id32
) -> UserResponse:
    target = await users.get_user(db, user_id)
    now = ctx.clock()
    if data.agent_user_group is not None:  # admin only: refused before anything changes
        task_users.link_agent_user(
            principal.user, target, _agent_link(data.agent_user_group), now=now
        )
    if data.password is not None:
        hashed = data.password if data.is_hashed else auth.client_hash(data.password)
        await users.set_password(
            db, principal.user, target, hashed, allow_empty=ctx.allow_empty_passwords, now=now
        )
    await users.update_user(
        db,
        principal.user,
        target,
        active=data.active,
        admin=data.admin,
        display_name=data.display_name,
        username=data.username,
        remote=data.remote,
        now=now,
    )
    return UserResponse(user=user_out(target))


def _agent_link(group: AgentUserGroupIn) -> AgentUserGroup | None:
    """All four fields: a link; none: unlinked; some: refused."""
    values = (group.agent_uid, group.agent_gid, group.agent_user, group.agent_group)
    if all(v is None for v in values):
        return None
    if any(v is None or v == "" for v in values):
        raise InvalidArgument(_LINK_FIELDS)
    assert group.agent_uid is not None and group.agent_gid is not None
    assert group.agent_user and group.agent_group
    return AgentUserGroup(
        uid=group.agent_uid, gid=group.agent_gid, user=group.agent_user, group=group.agent_group
    )


_LINK_FIELDS = (
    "agentUserGroup needs agentUid, agentGid, agentUser and agentGroup to link a user "
    "(or none of them, to unlink it)"
)


@post("/api/v1/users/{user_id:int}/password", status_code=200)
async def set_password(
    data: JSONBody[Any], db: Db, principal: Caller, ctx: Ctx, user_id: Id32
) -> UserResponse:
    """Determined sends the new password as a bare JSON string; an object form is accepted too."""
    if isinstance(data, str):
        data = {"password": data}
    if not isinstance(data, dict):
        raise InvalidArgument("body must be the new password as a JSON string or {password}")
    body = SetPasswordRequest.model_validate(data)
    target = await users.get_user(db, user_id)
    hashed = body.password if body.is_hashed else auth.client_hash(body.password)
    await users.set_password(
        db, principal.user, target, hashed, allow_empty=ctx.allow_empty_passwords, now=ctx.clock()
    )
    return UserResponse(user=user_out(target))


@patch("/api/v1/users")
async def patch_users(
    data: JSONBody[PatchUsersRequest], db: Db, principal: Caller, ctx: Ctx
) -> PatchUsersResponse:
    """Activate or deactivate many users at once (admins; the web UI's user table). Each user
    gets its own result: the caller cannot deactivate themselves, unknown ids are reported."""
    users.require_admin(principal.user)
    if data.filters is not None:
        ids = await users.matching_ids(db, name=data.filters.name, admin=data.filters.admin)
    else:
        ids = list(dict.fromkeys(data.user_ids))
    if not ids and data.filters is None:
        raise InvalidArgument("name userIds, or give filters")
    results = []
    for user_id in ids:
        error = ""
        try:
            async with db.begin_nested():
                target = await users.get_user(db, user_id)
                await users.update_user(
                    db,
                    principal.user,
                    target,
                    active=data.activate,
                    admin=None,
                    display_name=None,
                    now=ctx.clock(),
                )
        except DomainError as exc:
            error = str(exc)
        results.append(UserActionResult(error=error, id=user_id))
    return PatchUsersResponse(results=results)


ROUTES = [
    list_users,
    get_user,
    get_user_by_name,
    create_user,
    patch_user,
    patch_users,
    set_password,
]
