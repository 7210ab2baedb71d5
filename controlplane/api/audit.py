"""`GET /api/v1/master/audit`: the audit log, newest first, for admins (and ClusterAdmins).

Filters: `actor` (a username), `action` ("POST", a route such as
"/api/v1/roles/add-assignments", or both: "POST /api/v1/users"), `since` (RFC 3339 with a
zone). Pages: `offset`, `limit` (1-1000, default 100)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from litestar import get
from litestar.params import Parameter

from controlplane.api.deps import Caller, Db
from controlplane.api.schemas.audit import AuditEntryOut, AuditResponse
from controlplane.api.schemas.common import INT32_MAX, Pagination
from controlplane.domain.errors import InvalidArgument
from controlplane.services import audit
from controlplane.services.users import require_admin


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidArgument(f"since: {value!r} is not an RFC 3339 time") from exc
    if when.tzinfo is None:
        raise InvalidArgument(f"since: {value!r} has no zone offset (add Z or +00:00)")
    return when


@get("/api/v1/master/audit")
async def list_audit(
    db: Db,
    principal: Caller,
    actor: Annotated[str | None, Parameter(max_length=255)] = None,
    action: Annotated[str | None, Parameter(max_length=2048)] = None,
    since: Annotated[str | None, Parameter(max_length=64)] = None,
    offset: Annotated[int, Parameter(ge=0, le=INT32_MAX)] = 0,
    limit: Annotated[int, Parameter(ge=1, le=1000)] = 100,
) -> AuditResponse:
    require_admin(principal.user)
    rows, total = await audit.entries(
        db, actor=actor, action=action, since=_since(since), offset=offset, limit=limit
    )
    return AuditResponse(
        entries=[
            AuditEntryOut(
                id=r.id,
                time=r.at,
                actor_id=r.actor_id,
                actor=r.actor,
                action=f"{r.method} {r.route}",
                method=r.method,
                route=r.route,
                path=r.path,
                targets=r.targets,
                outcome=r.outcome,
                status=r.status,
                client_address=r.client_address,
            )
            for r in rows
        ],
        pagination=Pagination.of(offset, limit, len(rows), total),
    )


ROUTES = [list_audit]
