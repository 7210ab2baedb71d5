"""Tasks: live allocations, one task, context directory, logs in and out, accelerator reports;
allocations: the preemption signal and the accelerators their containers saw."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import datetime
from typing import Annotated

from litestar import Request, get, post
from litestar.datastructures import State
from litestar.params import FromQuery, JSONBody, Parameter, QueryParameter
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.deps import ApiContext, Caller, Ctx, Db
from controlplane.api.params import OrderBy, is_desc
from controlplane.api.schemas.accelerators import (
    AcceleratorData,
    GetTaskAcceleratorDataResponse,
    PostAllocationAcceleratorDataRequest,
)
from controlplane.api.schemas.commands import (
    AgentDevices,
    AllocationSummary,
    GetTaskResponse,
    GetTasksResponse,
    ResourcesSummary,
    TaskAllocation,
    TaskState,
    TaskType,
    WireDevice,
)
from controlplane.api.schemas.commands import Task as TaskOut
from controlplane.api.schemas.experiments import ModelDefResponse
from controlplane.api.schemas.reports import Empty, PostTaskLogsRequest, PreemptionResponse
from controlplane.api.streams import stream_logs, task_log_entry
from controlplane.db.models import Allocation, Task
from controlplane.domain.command_states import allocation_wire_state
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.rbac import Permission
from controlplane.services import allocations, generic_tasks, logs
from controlplane.services import tasks as task_views
from controlplane.services.accelerators import AcceleratorBoard, AcceleratorReport

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
    archive = await task_views.context_archive(db, task_id)
    return ModelDefResponse(b64_tgz=base64.b64encode(archive).decode() if archive else "")


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _task_type(task_type: str) -> TaskType:
    try:
        return TaskType(f"TASK_TYPE_{task_type}")
    except ValueError:
        return TaskType.UNSPECIFIED


def _devices(ctx: ApiContext, agent_id: str, device_ids: tuple[int, ...]) -> list[WireDevice]:
    handle = ctx.scheduling.registry.get(agent_id)
    known = {d.id: d for d in handle.devices} if handle is not None else {}
    out = []
    for device_id in device_ids:
        d = known.get(device_id)
        if d is None:
            out.append(WireDevice(id=device_id))
        else:
            kind = f"TYPE_{d.type.value.upper()}"
            out.append(WireDevice(id=d.id, brand=d.brand, uuid=d.uuid, type=kind))
    return out


def _summary(ctx: ApiContext, live: task_views.LiveAllocation) -> AllocationSummary:
    runner = ctx.scheduling.pools.get(live.resource_pool)
    scheduler = runner.scheduler_config if runner is not None else None
    default_priority = scheduler.default_priority if scheduler is not None else None
    resources = [
        ResourcesSummary(
            resources_id=c.container_id,
            allocation_id=live.allocation_id,
            agent_devices={
                c.agent_id: AgentDevices(devices=_devices(ctx, c.agent_id, c.device_ids))
            },
            container_id=c.container_id,
        )
        for c in live.containers
    ]
    return AllocationSummary(
        task_id=live.task_id,
        allocation_id=live.allocation_id,
        name=live.name,
        registered_time=_time(live.registered_at) or "",
        resource_pool=live.resource_pool,
        slots_needed=live.slots,
        resources=resources,
        scheduler_type=scheduler.type.value if scheduler is not None else "",
        priority=live.priority if live.priority is not None else default_priority,
        task_type=_task_type(live.task_type),
        state=TaskState(allocation_wire_state(live.state)),
    )


@get("/api/v1/tasks")
async def list_tasks(db: Db, principal: Caller, ctx: Ctx) -> GetTasksResponse:
    """Every live allocation, by allocation id (v1GetTasksResponse); under RBAC, of the
    trials and tasks in workspaces where the caller may view them (as Determined)."""
    live = await task_views.live_allocations(
        db,
        trials_in=principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA),
        others_in=principal.workspaces(Permission.VIEW_NSC),
    )
    return GetTasksResponse(
        allocation_id_to_summary={a.allocation_id: _summary(ctx, a) for a in live}
    )


def _allocation_out(alloc: Allocation) -> TaskAllocation:
    return TaskAllocation(
        task_id=alloc.task_id,
        allocation_id=alloc.allocation_id,
        state=TaskState(allocation_wire_state(alloc.state)),
        is_ready=alloc.ready,
        start_time=_time(alloc.start_time),
        end_time=_time(alloc.end_time),
        exit_reason=alloc.exit_reason,
        slots=alloc.slots,
    )


@get("/api/v1/tasks/{task_id:str}")
async def get_task(db: Db, principal: Caller, task_id: TaskId) -> GetTaskResponse:
    task, allocs = await task_views.get_task(db, task_id)
    out = TaskOut(
        task_id=task.task_id,
        task_type=_task_type(task.task_type),
        allocations=[_allocation_out(a) for a in allocs],
        start_time=_time(task.start_time) or "",
        end_time=_time(task.end_time),
    )
    if task.task_type == generic_tasks.TASK_TYPE:
        view = await generic_tasks.get(db, task_id)
        out.task_state = view.state.value
        out.config = json.dumps(view.generic.config, sort_keys=True)
        out.forked_from = view.generic.forked_from
        out.parent_id = view.generic.parent_id
        out.no_pause = view.generic.no_pause
    return GetTaskResponse(task=out)


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
    # the filters of Determined's GetTaskLogs (`det … logs --agent-id …`)
    rank_ids: Annotated[list[int] | None, QueryParameter(name="rankIds")] = None,
    agent_ids: Annotated[list[str] | None, QueryParameter(name="agentIds")] = None,
    container_ids: Annotated[list[str] | None, QueryParameter(name="containerIds")] = None,
    allocation_ids: Annotated[list[str] | None, QueryParameter(name="allocationIds")] = None,
    stdtypes: StrList = None,
    sources: StrList = None,
    timestamp_before: Annotated[datetime | None, QueryParameter(name="timestampBefore")] = None,
    timestamp_after: Annotated[datetime | None, QueryParameter(name="timestampAfter")] = None,
) -> Stream:
    await _task(db, task_id)
    for rank in rank_ids or []:
        if not 0 <= rank <= 2**31 - 1:
            raise InvalidArgument(f"rank id {rank} is out of range")
    query = logs.LogQuery(
        task_id=task_id,
        limit=limit,
        descending=is_desc(order_by),
        levels=tuple(levels or ()),
        rank_ids=tuple(rank_ids or ()),
        agent_ids=tuple(agent_ids or ()),
        container_ids=tuple(container_ids or ()),
        allocation_ids=tuple(allocation_ids or ()),
        stdtypes=tuple(stdtypes or ()),
        sources=tuple(sources or ()),
        search_text=search_text,
        timestamp_before=timestamp_before,
        timestamp_after=timestamp_after,
    )

    async def task_done(session: AsyncSession) -> bool:
        return await logs.task_ended(session, task_id)

    return Stream(
        stream_logs(ctx.sessionmaker, query, task_log_entry, follow=follow, is_done=task_done),
        media_type="application/x-ndjson",
    )


async def _client_gone(request: Request) -> None:
    """Returns once the client hangs up (a GET has no body, so the next ASGI message is that)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


@get("/api/v1/allocations/{allocation_id:str}/signals/preemption")
async def preemption_signal(
    request: Request,
    db: Db,
    principal: Caller,
    ctx: Ctx,
    allocation_id: AllocationId,
    timeout_seconds: Annotated[int, Parameter(ge=0, le=3600)] = 0,
    timeout_seconds_camel: Annotated[
        int | None, QueryParameter(name="timeoutSeconds", ge=0, le=3600)
    ] = None,
) -> PreemptionResponse:
    """Long poll: answers at once if preemption is wanted, else after up to the timeout.

    Each waiting watcher reads the allocation every LONG_POLL_STEP_S, so a watcher whose client
    is gone (its task ended, the connection dropped) stops at once instead of polling on for up
    to an hour.
    """
    await allocations.allocation_for(db, principal, allocation_id)
    await db.commit()  # hand the connection back: the poll below may hold this request a minute
    timeout = timeout_seconds_camel if timeout_seconds_camel is not None else timeout_seconds
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    gone = asyncio.ensure_future(_client_gone(request))
    try:
        while True:
            async with ctx.sessionmaker() as session:
                if await allocations.should_preempt(session, allocation_id):
                    return PreemptionResponse(preempt=True)
            left = deadline - loop.time()
            if left <= 0:
                return PreemptionResponse(preempt=False)
            await asyncio.wait({gone}, timeout=min(LONG_POLL_STEP_S, left))
            if gone.done():
                return PreemptionResponse(preempt=False)  # nobody will read it
    finally:
        gone.cancel()


@post("/api/v1/allocations/{allocation_id:str}/signals/ack_preemption", status_code=200)
async def ack_preemption(db: Db, principal: Caller, allocation_id: AllocationId) -> Empty:
    await allocations.ack_preemption(db, principal, allocation_id)
    return Empty()


def _accelerators(state: State) -> AcceleratorBoard:
    board = state.get("accelerators")
    if board is None:
        board = state["accelerators"] = AcceleratorBoard()
    return board


@post("/api/v1/allocations/{allocation_id:str}/acceleratorData", status_code=200)
async def post_accelerator_data(
    request: Request,
    data: JSONBody[PostAllocationAcceleratorDataRequest],
    db: Db,
    principal: Caller,
    allocation_id: AllocationId,
) -> Empty:
    """prep_container's report of the accelerators one container sees. The allocation, its task
    and pool come from the master's records (the path and the token), not from the body."""
    alloc = await allocations.allocation_for(db, principal, allocation_id)
    sent = data.accelerator_data
    report = AcceleratorReport(
        allocation_id=alloc.allocation_id,
        task_id=alloc.task_id,
        resource_pool=alloc.resource_pool,
        container_id=sent.container_id or "",
        node_name=sent.node_name or "",
        accelerator_type=sent.accelerator_type or "",
        accelerator_uuids=tuple(sent.accelerator_uuids or ()),
    )
    _accelerators(request.app.state).record(report)
    return Empty()


@get("/api/v1/tasks/{task_id:str}/acceleratorData")
async def task_accelerator_data(
    request: Request, db: Db, principal: Caller, task_id: TaskId
) -> GetTaskAcceleratorDataResponse:
    """What the containers of the task's allocations reported, oldest allocation first."""
    _, allocs = await task_views.get_task(db, task_id)
    reports = _accelerators(request.app.state).for_allocations([a.allocation_id for a in allocs])
    return GetTaskAcceleratorDataResponse(
        accelerator_data=[
            AcceleratorData(
                container_id=r.container_id,
                allocation_id=r.allocation_id,
                node_name=r.node_name,
                task_id=r.task_id,
                accelerator_type=r.accelerator_type,
                accelerator_uuids=list(r.accelerator_uuids),
                resource_pool=r.resource_pool,
            )
            for r in reports
        ]
    )


ROUTES = [
    list_tasks,
    get_task,
    context_directory,
    post_task_logs,
    task_logs,
    preemption_signal,
    ack_preemption,
    post_accelerator_data,
    task_accelerator_data,
]
