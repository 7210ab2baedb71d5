"""Request-scoped dependencies: the DB session (owns the transaction), the caller, the clock."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.exceptions import HTTPException
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.api.access import audit_intent, authorize, authorize_rbac
from controlplane.api.errors import status_for
from controlplane.api.login_guard import LoginGuard
from controlplane.api.session_cookie import cookie_token, require_same_origin
from controlplane.domain.errors import DomainError, Unauthenticated, Unavailable
from controlplane.services import audit, rbac
from controlplane.services.experiments import ExperimentDefaults
from controlplane.services.interactive import InteractiveDefaults
from controlplane.services.periodic_jobs import PeriodicJobs
from controlplane.services.principals import (
    Principal,
    principal_for_allocation_token,
    principal_for_user_token,
)
from controlplane.services.provisioning.loop import Provisioning
from controlplane.services.rbac import HeldCache
from controlplane.services.reschedule import take_pokes
from controlplane.services.scheduling.pools import Scheduling

ALLOCATION_HEADER = "grpc-metadata-x-allocation-token"


@dataclass(frozen=True)
class ApiContext:
    """What handlers need from the master's settings; built once by the app factory."""

    sessionmaker: async_sessionmaker[AsyncSession]
    clock: Callable[[], datetime]
    version: str
    cluster_id: str
    master_id: str
    cluster_name: str
    token_lifetime: timedelta
    allow_empty_passwords: bool
    experiment_defaults: ExperimentDefaults
    public_config: dict[str, Any]
    scheduling: Scheduling
    provisioning: Provisioning | None = None
    interactive: InteractiveDefaults = field(default_factory=InteractiveDefaults)
    periodic: PeriodicJobs | None = None
    login_guard: LoginGuard | None = None  # None: logins are not throttled
    # The master serves TLS: the UI's session cookie is Secure (api/session_cookie.py).
    tls: bool = False
    # security.authz.type: rbac — every route's permission decides (api/route_permissions.py).
    rbac: bool = False
    held_cache: HeldCache = field(default_factory=HeldCache)


def utc_now() -> datetime:
    return datetime.now(UTC)


def ctx_of(state: State) -> ApiContext:
    return state["api"]


async def provide_session(state: State) -> AsyncGenerator[AsyncSession, None]:
    ctx = ctx_of(state)
    async with ctx.sessionmaker() as session:
        try:
            yield session
            if (intent := audit.take(session)) is not None:  # with the change it records
                audit.record(session, intent, outcome="ok", status=200, at=ctx.clock())
            await session.commit()
            ctx.scheduling.deliver(take_pokes(session))
            if session.info.pop(rbac.CHANGED, False):
                ctx.held_cache.clear()
        except DBAPIError as exc:
            await session.rollback()
            if exc.connection_invalidated:
                raise Unavailable("the database is unavailable; retry shortly") from exc
            raise
        except BaseException as exc:
            await session.rollback()
            await _record_failure(session, ctx, exc)
            raise


async def _record_failure(session: AsyncSession, ctx: ApiContext, exc: BaseException) -> None:
    """A refused or failed audited request is recorded too, in a transaction of its own."""
    intent = audit.take(session)
    if intent is None:
        return
    # A dependency that failed (the caller refused) closes this generator with GeneratorExit:
    # the refusal left its status on the intent.
    status = (
        intent.status
        if intent.status is not None
        else status_for(exc)[0]
        if isinstance(exc, DomainError)
        else exc.status_code
        if isinstance(exc, HTTPException)
        else 500
    )
    outcome = _OUTCOMES.get(status, "failed")
    session.info.pop(rbac.CHANGED, None)
    audit.record(session, intent, outcome=outcome, status=status, at=ctx.clock())
    await session.commit()


_OUTCOMES = {400: "invalid", 403: "denied", 404: "not_found", 409: "conflict"}


def bearer(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def provide_principal(request: Request, db: Db, state: State) -> Principal:
    """Who calls, checked against the route's class (`access.RULES`) before the handler runs."""
    now = ctx_of(state).clock()
    task_token = bearer(request.headers.get(ALLOCATION_HEADER))
    user_token = bearer(request.headers.get("authorization"))
    if task_token:
        principal = await principal_for_allocation_token(db, task_token, now)
    elif user_token:
        principal = await principal_for_user_token(db, user_token, now)
    elif ui_token := cookie_token(request):
        # The web UI's cookie: the browser sends it for any page, so writes prove their origin.
        require_same_origin(request)
        principal = await principal_for_user_token(db, ui_token, now)
    else:
        raise Unauthenticated("authentication required: log in with `det user login`")
    ctx = ctx_of(state)
    # Decided first, so that a refused attempt at an audited change is recorded as well.
    if (intent := await audit_intent(request, principal, db)) is not None:
        audit.intend(db, intent)
    try:
        authorize(request, principal, rbac_on=ctx.rbac)
        if ctx.rbac:
            acting = await authorize_rbac(request, principal, db, ctx.held_cache)
            if (
                acting.user is not principal.user  # a role stood in for an admin
                and intent is None
                and (intent := await audit_intent(request, acting, db)) is not None
            ):
                audit.intend(db, intent)
            principal = acting
    except DomainError as exc:
        if intent is not None:
            intent.status = status_for(exc)[0]
        raise
    return principal


def provide_now(state: State) -> datetime:
    return ctx_of(state).clock()


def provide_ctx(state: State) -> ApiContext:
    return ctx_of(state)


# Handler parameters name their dependencies explicitly (Litestar 3 drops inference).
Db = NamedDependency[AsyncSession]
Caller = NamedDependency[Principal]
Ctx = NamedDependency[ApiContext]
