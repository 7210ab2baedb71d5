"""Handshake, login/logout/me and master identity."""

from __future__ import annotations

from litestar import Request, Response, get, post
from litestar.params import JSONBody

from controlplane.api import login_guard, session_cookie
from controlplane.api.deps import Caller, Ctx, Db
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
        rbac_enabled=ctx.rbac,
    )


@post("/api/v1/auth/login", status_code=200, responses=login_guard.RESPONSES)
async def login(
    request: Request, data: JSONBody[LoginRequest], db: Db, ctx: Ctx
) -> Response[LoginResponse]:
    """`{token, user}`; the web UI's login (it sends X-Resolute-CSRF: 1) gets an HttpOnly
    `auth` cookie and `{user}` instead (api/session_cookie.py)."""
    if session_cookie.wants_cookie(request):
        # Before the throttle and the password: a refused cross-site login counts for nothing.
        session_cookie.require_same_origin(request)
    guard, now = ctx.login_guard, ctx.clock()
    verify = await guard.admit(request, data.username, now) if guard else None
    if isinstance(verify, Response):
        return verify  # 429 + Retry-After, before any hashing (api/login_guard.py)
    result = await auth.login(
        db,
        data.username,
        data.password,
        is_hashed=data.is_hashed,
        now=now,
        lifetime=ctx.token_lifetime,
        verify=verify,
    )
    if guard:
        guard.succeeded(request, data.username, now)
    reply = LoginResponse(token=result.token, user=user_out(result.user))
    return session_cookie.login_reply(request, reply, lifetime=ctx.token_lifetime, tls=ctx.tls)


@post("/api/v1/auth/logout", status_code=200)
async def logout(request: Request, db: Db, principal: Caller, ctx: Ctx) -> Response[Empty]:
    """Ends the session of the token used (bearer or the UI's cookie) and clears the cookie."""
    await auth.logout(db, principal.token)
    return Response(Empty(), cookies=[session_cookie.clear_cookie(request, tls=ctx.tls)])


@get("/api/v1/me")
async def me(principal: Caller) -> MeResponse:
    return MeResponse(user=user_out(principal.user))


@get("/api/v1/master")
async def master(ctx: Ctx) -> MasterResponse:
    """Public, as Determined's GetMaster: the real client reads `rbacEnabled` before logging
    in (its `det user-group` and `det rbac` commands); it says no more than `/info`."""
    return MasterResponse(
        version=ctx.version,
        master_id=ctx.master_id,
        cluster_id=ctx.cluster_id,
        cluster_name=ctx.cluster_name,
        rbac_enabled=ctx.rbac,
    )


@get("/api/v1/master/config")
async def master_config(principal: Caller, ctx: Ctx) -> MasterConfigResponse:
    require_admin(principal.user)
    return MasterConfigResponse(config=ctx.public_config)


ROUTES = [info, login, logout, me, master, master_config]
