"""The cluster-wide message (`det master cluster-message set|get|clear`), admins only; every
user sees the one showing now in GET /api/v1/master (api/master.py) and the web UI's banner."""

from __future__ import annotations

from litestar import delete, get, put
from litestar.params import JSONBody

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.schemas.master import (
    ClusterMessageOut,
    GetClusterMessageResponse,
    SetClusterMessageRequest,
)
from controlplane.api.schemas.reports import Empty
from controlplane.db.models import ClusterMessage
from controlplane.domain import cluster_message as rules
from controlplane.services import cluster_message
from controlplane.services.users import require_admin

PATH = "/api/v1/master/cluster_message"


def message_out(row: ClusterMessage | None) -> ClusterMessageOut | None:
    if row is None:
        return None
    return ClusterMessageOut(
        message=row.message,
        start_time=row.start_time,
        end_time=row.end_time,
        created_time=row.created_at,
    )


@get(PATH)
async def get_message(db: Db, principal: Caller, ctx: Ctx) -> GetClusterMessageResponse:
    require_admin(principal.user)
    row = await cluster_message.current(db, ctx.clock(), showing=False)
    return GetClusterMessageResponse(cluster_message=message_out(row))


@put(PATH)
async def set_message(
    data: JSONBody[SetClusterMessageRequest], db: Db, principal: Caller, ctx: Ctx
) -> Empty:
    require_admin(principal.user)
    now = ctx.clock()
    window = rules.plan(data.message, data.start_time, data.end_time, data.duration, now)
    await cluster_message.put(db, principal.user.id, window, now)
    return Empty()


@delete(PATH, status_code=200)
async def clear_message(db: Db, principal: Caller) -> Empty:
    require_admin(principal.user)
    await cluster_message.clear(db)
    return Empty()


ROUTES = [get_message, set_message, clear_message]
