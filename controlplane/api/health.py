"""`GET /health` (Determined's path, no login): whether this master can serve, for load
balancers and orchestrators. 200 while the database answers, 503 while it does not, so a load
balancer sends no requests to a master that would answer them 503."""

from __future__ import annotations

import asyncio

from litestar import Response, get
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from controlplane.api.deps import Ctx

PING_TIMEOUT_S = 2.0


async def _database_up(ctx: Ctx) -> bool:
    try:
        async with asyncio.timeout(PING_TIMEOUT_S), ctx.sessionmaker() as session:
            await session.execute(text("SELECT 1"))
    except (TimeoutError, DBAPIError, SQLAlchemyError, OSError):
        return False
    return True


@get("/health")
async def health(ctx: Ctx) -> Response[dict[str, object]]:
    up = await _database_up(ctx)
    state = "up" if up else "down"
    body: dict[str, object] = {
        "status": state,
        "database": state,
        "resource_managers": [{"cluster_name": ctx.cluster_name, "status": "up"}],
    }
    return Response(body, status_code=200 if up else 503)


ROUTES = [health]
