"""Request-scoped dependencies: the DB session (owns the transaction), the caller, the clock."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.api.access import authorize
from controlplane.domain.errors import Unauthenticated, Unavailable
from controlplane.services.experiments import ExperimentDefaults
from controlplane.services.interactive import InteractiveDefaults
from controlplane.services.periodic_jobs import PeriodicJobs
from controlplane.services.principals import (
    Principal,
    principal_for_allocation_token,
    principal_for_user_token,
)
from controlplane.services.provisioning.loop import Provisioning
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


def utc_now() -> datetime:
    return datetime.now(UTC)


def ctx_of(state: State) -> ApiContext:
    return state["api"]


async def provide_session(state: State) -> AsyncGenerator[AsyncSession, None]:
    ctx = ctx_of(state)
    async with ctx.sessionmaker() as session:
        try:
            yield session
            await session.commit()
            ctx.scheduling.deliver(take_pokes(session))
        except DBAPIError as exc:
            await session.rollback()
            if exc.connection_invalidated:
                raise Unavailable("the database is unavailable; retry shortly") from exc
            raise
        except BaseException:
            await session.rollback()
            raise


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
    else:
        raise Unauthenticated("authentication required: log in with `det user login`")
    authorize(request, principal)
    return principal


def provide_now(state: State) -> datetime:
    return ctx_of(state).clock()


def provide_ctx(state: State) -> ApiContext:
    return ctx_of(state)


# Handler parameters name their dependencies explicitly (Litestar 3 drops inference).
Db = NamedDependency[AsyncSession]
Caller = NamedDependency[Principal]
Ctx = NamedDependency[ApiContext]
