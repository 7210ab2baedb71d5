"""The audit log on the wire (`GET /api/v1/master/audit`): Resolute's own, in the API's style."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from controlplane.api.schemas.common import Pagination, Wire


class AuditEntryOut(Wire):
    id: int
    time: datetime
    actor_id: int | None
    actor: str
    action: str  # "METHOD route"
    method: str
    route: str
    path: str
    targets: dict[str, Any]
    outcome: str
    status: int
    client_address: str | None = None


class AuditResponse(Wire):
    entries: list[AuditEntryOut]
    pagination: Pagination
