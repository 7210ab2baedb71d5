"""The values a task's or trial's logs can be filtered by (Determined's TaskLogsFields and
TrialLogsFields: the web UI's log filters). An NDJSON stream of `{"result": …}` lines: one,
or with `follow` one more each time the values change, until the task ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from litestar import get
from litestar.params import FromQuery, Parameter
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.db.models import Task
from controlplane.domain.errors import NotFound
from controlplane.domain.states import RunState
from controlplane.services import logs, trials

FOLLOW_POLL_S = 1.0
TaskId = Annotated[str, Parameter(max_length=128)]


async def _fields_stream(
    sessionmaker: async_sessionmaker[AsyncSession],
    task_id: str,
    shape: Callable[[dict[str, list[Any]]], dict[str, list[Any]]],
    follow: bool,
    is_done: Callable[[AsyncSession], Awaitable[bool]],
) -> AsyncIterator[bytes]:
    last: dict[str, list[Any]] | None = None
    while True:
        async with sessionmaker() as session:
            done = not follow or await is_done(session)
            found = shape(await logs.fields(session, task_id))
        if found != last:
            yield (json.dumps({"result": found}, separators=(",", ":")) + "\n").encode()
            last = found
        if done:
            return
        await asyncio.sleep(FOLLOW_POLL_S)


@get("/api/v1/tasks/{task_id:str}/logs/fields", media_type="application/x-ndjson")
async def task_log_fields(
    db: Db, principal: Caller, ctx: Ctx, task_id: TaskId, follow: FromQuery[bool] = False
) -> Stream:
    if await db.get(Task, task_id) is None:
        raise NotFound(f"task {task_id} not found")

    async def done(session: AsyncSession) -> bool:
        return await logs.task_ended(session, task_id)

    return Stream(
        _fields_stream(ctx.sessionmaker, task_id, lambda f: f, follow, done),
        media_type="application/x-ndjson",
    )


@get("/api/v1/trials/{trial_id:int}/logs/fields", media_type="application/x-ndjson")
async def trial_log_fields(
    db: Db, principal: Caller, ctx: Ctx, trial_id: Id32, follow: FromQuery[bool] = False
) -> Stream:
    trial = await trials.get_trial(db, trial_id)

    async def done(session: AsyncSession) -> bool:
        return RunState((await trials.get_trial(session, trial_id)).state).is_terminal

    def shape(found: dict[str, list[Any]]) -> dict[str, list[Any]]:
        # TrialLogsFieldsResponse has no allocation ids.
        return {k: v for k, v in found.items() if k != "allocationIds"}

    return Stream(
        _fields_stream(ctx.sessionmaker, trial.task_id, shape, follow, done),
        media_type="application/x-ndjson",
    )


ROUTES = [task_log_fields, trial_log_fields]
