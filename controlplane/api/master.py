"""Handshake, login/logout/me and master identity."""

from __future__ import annotations

from litestar import Request, get, post
from litestar.params import JSONBody

from controlplane.api.deps import Caller, Ctx, Db, bearer
from controlplane.api.schemas.master import InfoResponse, MasterConfigResponse, MasterResponse
from controlplane.api.schemas.reports import Empty
from controlplane.api.schemas.users import LoginRequest, LoginResponse, MeResponse
from controlplane.api.serializers import user_out
from controlplane.services import auth
from controlplane.services.users import require_admin


@get("/info", sync_to_thread=False)
def info(ctx: Ctx) -> InfoResponse:
    return InfoResponse(
        version=ctx.version,
        master_id=ctx.master_id,
        cluster_id=ctx.cluster_id,
        cluster_name=ctx.cluster_name,
    )


@post("/api/v1/auth/login", status_code=200)
async def login(data: JSONBody[LoginRequest], db: Db, ctx: Ctx) -> LoginResponse:
    result = await auth.login(
        db,
        data.username,
        data.password,
        is_hashed=data.is_hashed,
        now=ctx.clock(),
        lifetime=ctx.token_lifetime,
    )
    return LoginResponse(token=result.token, user=user_out(result.user))


@post("/api/v1/auth/logout", status_code=200)
async def logout(request: Request, db: Db, principal: Caller) -> Empty:
    token = bearer(request.headers.get("authorization"))
    if token:
        await auth.logout(db, token)
    return Empty()


@get("/api/v1/me")
async def me(principal: Caller) -> MeResponse:
    return MeResponse(user=user_out(principal.user))


@get("/api/v1/master")
async def master(principal: Caller, ctx: Ctx) -> MasterResponse:
    return MasterResponse(
        version=ctx.version,
        master_id=ctx.master_id,
        cluster_id=ctx.cluster_id,
        cluster_name=ctx.cluster_name,
    )


@get("/api/v1/master/config")
async def master_config(principal: Caller, ctx: Ctx) -> MasterConfigResponse:
    require_admin(principal.user)
    return MasterConfigResponse(config=ctx.public_config)


ROUTES = [info, login, logout, me, master, master_config]
