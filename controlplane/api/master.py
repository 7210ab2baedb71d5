"""Handshake, login/logout/me and master identity."""

from __future__ import annotations

import logging

from litestar import Request, Response, get, patch, post
from litestar.params import JSONBody

from controlplane.api import login_guard, session_cookie
from controlplane.api.cluster_message import message_out
from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.schemas.master import (
    InfoResponse,
    MasterConfigResponse,
    MasterResponse,
    PatchMasterConfigRequest,
    TelemetryResponse,
)
from controlplane.api.schemas.reports import Empty
from controlplane.api.schemas.users import LoginRequest, LoginResponse, MeResponse
from controlplane.api.serializers import user_out
from controlplane.domain.errors import InvalidArgument
from controlplane.services import auth, cluster_message
from controlplane.services.users import require_admin

log = logging.getLogger("controlplane.master")


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


@get(["/api/v1/me", "/api/v1/auth/user"])
async def me(principal: Caller) -> MeResponse:
    return MeResponse(user=user_out(principal.user))


@get("/api/v1/master")
async def master(ctx: Ctx, db: Db) -> MasterResponse:
    """Public, as Determined's GetMaster: the real client reads `rbacEnabled` before logging
    in (its `det user-group` and `det rbac` commands); it says no more than `/info` and the
    cluster message every user is shown (the login page shows it too)."""
    showing = await cluster_message.current(db, ctx.clock(), showing=True)
    return MasterResponse(
        version=ctx.version,
        master_id=ctx.master_id,
        cluster_id=ctx.cluster_id,
        cluster_name=ctx.cluster_name,
        rbac_enabled=ctx.rbac,
        cluster_message=message_out(showing),
    )


@get("/api/v1/master/config")
async def master_config(principal: Caller, ctx: Ctx) -> MasterConfigResponse:
    require_admin(principal.user)
    return MasterConfigResponse(config=ctx.public_config)


_LEVELS = {
    "LOG_LEVEL_TRACE": logging.DEBUG,
    "LOG_LEVEL_DEBUG": logging.DEBUG,
    "LOG_LEVEL_INFO": logging.INFO,
    "LOG_LEVEL_WARNING": logging.WARNING,
    "LOG_LEVEL_ERROR": logging.ERROR,
    "LOG_LEVEL_FATAL": logging.CRITICAL,
}


@patch("/api/v1/master/config")
async def patch_master_config(
    data: JSONBody[PatchMasterConfigRequest], principal: Caller, ctx: Ctx
) -> Empty:
    """`det master config set --log.level LEVEL`: the master's log level, until it restarts
    (the config file keeps its own). `--log.color` is accepted; the master's log has no colors."""
    require_admin(principal.user)
    paths = set(data.field_mask.paths if data.field_mask else ())
    unknown = paths - {"log.level", "log.color"}
    if unknown or not paths:
        raise InvalidArgument(
            f"only log.level and log.color may be patched, not {sorted(unknown) or 'nothing'}"
        )
    if "log.level" in paths:
        level = data.config.log.level if data.config and data.config.log else None
        if level not in _LEVELS:
            raise InvalidArgument(f"log.level must be one of {', '.join(_LEVELS)}")
        logging.getLogger().setLevel(_LEVELS[level])
        log.warning("log level set to %s by %s", level, principal.user.username)
    return Empty()


@get("/api/v1/master/telemetry")
async def telemetry(principal: Caller) -> TelemetryResponse:
    """Resolute sends no telemetry anywhere."""
    return TelemetryResponse(enabled=False)


ROUTES = [info, login, logout, me, master, master_config, patch_master_config, telemetry]
