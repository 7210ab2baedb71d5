"""Tasks: context directory, logs in and out; allocations: the preemption signal."""

from __future__ import annotations

import asyncio
import base64
from typing import Annotated

from litestar import get, post
from litestar.params import FromQuery, JSONBody, Parameter, QueryParameter
from litestar.response import Stream
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import OrderBy, is_desc
from controlplane.api.schemas.experiments import ModelDefResponse
from controlplane.api.schemas.reports import Empty, PostTaskLogsRequest, PreemptionResponse
from controlplane.api.streams import stream_logs, task_log_entry
from controlplane.db.models import ExperimentContext, Task, Trial
from controlplane.domain.errors import NotFound
from controlplane.services import allocations, logs

TaskId = Annotated[str, Parameter(max_length=128)]
AllocationId = Annotated[str, Parameter(max_length=160)]
StrList = Annotated[list[str] | None, Parameter()]
LONG_POLL_STEP_S = 0.5


async def _task(db: Db, task_id: str) -> Task:
    task = await db.get(Task, task_id)
    if task is None:
        raise NotFound(f"task {task_id} not found")
    return task


@get("/api/v1/tasks/{task_id:str}/context_directory")
async def context_directory(db: Db, principal: Caller, task_id: TaskId) -> ModelDefResponse:
    await _task(db, task_id)
    exp_id = await db.scalar(select(Trial.experiment_id).where(Trial.task_id == task_id))
    ctx = await db.get(ExperimentContext, exp_id) if exp_id is not None else None
    return ModelDefResponse(b64_tgz=base64.b64encode(ctx.archive).decode() if ctx else "")


@post("/api/v1/task/logs", status_code=200)
async def post_task_logs(
    data: JSONBody[PostTaskLogsRequest], db: Db, principal: Caller, ctx: Ctx
) -> Empty:
    lines = [
        logs.LogLine(
            task_id=item.task_id,
            log=item.log,
            timestamp=item.timestamp,
            allocation_id=item.allocation_id,
            agent_id=item.agent_id,
            container_id=item.container_id,
            rank_id=item.rank_id,
            level=item.level,
            stdtype=item.stdtype,
            source=item.source,
        )
        for item in data.logs
    ]
    await logs.append(db, principal, lines, ctx.clock())
    return Empty()


@get("/api/v1/tasks/{task_id:str}/logs", media_type="application/x-ndjson")
async def task_logs(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    task_id: TaskId,
    follow: FromQuery[bool] = False,
    limit: Annotated[int, Parameter(ge=0, le=2**31 - 1)] = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    levels: StrList = None,
    search_text: Annotated[str | None, QueryParameter(name="searchText")] = None,
) -> Stream:
    await _task(db, task_id)
    query = logs.LogQuery(
        task_id=task_id,
        limit=limit,
        descending=is_desc(order_by),
        levels=tuple(levels or ()),
        search_text=search_text,
    )

    async def task_done(session: AsyncSession) -> bool:
        return await logs.task_ended(session, task_id)

    return Stream(
        stream_logs(ctx.sessionmaker, query, task_log_entry, follow=follow, is_done=task_done),
        media_type="application/x-ndjson",
    )


@get("/api/v1/allocations/{allocation_id:str}/signals/preemption")
async def preemption_signal(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    allocation_id: AllocationId,
    timeout_seconds: Annotated[int, Parameter(ge=0, le=3600)] = 0,
    timeout_seconds_camel: Annotated[
        int | None, QueryParameter(name="timeoutSeconds", ge=0, le=3600)
    ] = None,
) -> PreemptionResponse:
    """Long poll: answers at once if preemption is wanted, else after up to the timeout."""
    await allocations.allocation_for(db, principal, allocation_id)
    await db.commit()  # hand the connection back: the poll below may hold this request a minute
    timeout = timeout_seconds_camel if timeout_seconds_camel is not None else timeout_seconds
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        async with ctx.sessionmaker() as session:
            if await allocations.should_preempt(session, allocation_id):
                return PreemptionResponse(preempt=True)
        if loop.time() >= deadline:
            return PreemptionResponse(preempt=False)
        await asyncio.sleep(min(LONG_POLL_STEP_S, max(0.0, deadline - loop.time())))


@post("/api/v1/allocations/{allocation_id:str}/signals/ack_preemption", status_code=200)
async def ack_preemption(db: Db, principal: Caller, allocation_id: AllocationId) -> Empty:
    await allocations.ack_preemption(db, principal, allocation_id)
    return Empty()


ROUTES = [context_directory, post_task_logs, task_logs, preemption_signal, ack_preemption]
