"""`det master logs [-f] [--tail N]` (Determined's MasterLogs): this master's own log lines as
an NDJSON stream of `{"result": {"logEntry": …}}`; admins only (the log names users, tasks and
addresses)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated

from litestar import get
from litestar.datastructures import State
from litestar.params import FromQuery, Parameter
from litestar.response import Stream

from controlplane.api.deps import Caller
from controlplane.services.master_log import Entry, LogRing
from controlplane.services.users import require_admin

FOLLOW_POLL_S = 0.25
RING = "master_log"


def _line(entry: Entry) -> bytes:
    body = {
        "logEntry": {
            "id": entry.id,
            "timestamp": entry.timestamp.isoformat().replace("+00:00", "Z"),
            "level": entry.level,
            "message": entry.message,
        }
    }
    return (json.dumps({"result": body}, separators=(",", ":")) + "\n").encode()


async def _stream(ring: LogRing, offset: int, limit: int, follow: bool) -> AsyncIterator[bytes]:
    sent = 0
    entries = ring.read(offset=offset, limit=limit)
    last = entries[-1].id if entries else ring.last_id
    for entry in entries:
        yield _line(entry)
    sent += len(entries)
    while follow and (limit == 0 or sent < limit):
        await asyncio.sleep(FOLLOW_POLL_S)
        more = ring.read(offset=0, limit=limit - sent if limit else 0, after_id=last)
        for entry in more:
            yield _line(entry)
        if more:
            last = more[-1].id
            sent += len(more)


@get("/api/v1/master/logs", media_type="application/x-ndjson")
async def master_logs(
    principal: Caller,
    state: State,
    offset: Annotated[int, Parameter(ge=-(2**31), le=2**31 - 1)] = 0,
    limit: Annotated[int, Parameter(ge=0, le=2**31 - 1)] = 0,
    follow: FromQuery[bool] = False,
) -> Stream:
    require_admin(principal.user)
    ring: LogRing = state[RING]
    return Stream(_stream(ring, offset, limit, follow), media_type="application/x-ndjson")


ROUTES = [master_logs]
