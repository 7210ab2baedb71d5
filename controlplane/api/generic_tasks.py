"""Generic tasks (`det task create|config|fork|kill|pause|unpause`): Determined's
/api/v1/generic-tasks and /api/v1/tasks/{id}/{config,kill,pause,unpause}."""

from __future__ import annotations

import json
from typing import Annotated

from litestar import get, post
from litestar.params import JSONBody, Parameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.schemas.generic_tasks import (
    CreateGenericTaskRequest,
    CreateGenericTaskResponse,
    GetGenericTaskConfigResponse,
    KillGenericTaskRequest,
)
from controlplane.api.schemas.reports import Empty
from controlplane.services import generic_tasks

TaskId = Annotated[str, Parameter(max_length=128)]


@post("/api/v1/generic-tasks", status_code=200)
async def create_generic_task(
    data: JSONBody[CreateGenericTaskRequest], db: Db, principal: Caller, ctx: Ctx
) -> CreateGenericTaskResponse:
    """Queue a generic task; its logs are at GET /api/v1/tasks/{id}/logs."""
    view = await generic_tasks.create(
        db,
        principal.user,
        generic_tasks.NewGenericTask(
            config=data.config,
            files=data.context_directory,
            project_id=data.project_id,
            forked_from=data.forked_from or None,
            parent_id=data.parent_id or None,
            inherit_context=bool(data.inherit_context),
            no_pause=bool(data.no_pause),
        ),
        ctx.scheduling,
        now=ctx.clock(),
    )
    return CreateGenericTaskResponse(task_id=view.task.task_id)


@get("/api/v1/tasks/{task_id:str}/config")
async def get_generic_task_config(
    db: Db, principal: Caller, task_id: TaskId
) -> GetGenericTaskConfigResponse:
    """The task's config as its user sent it (a fork's merged over its source's), JSON text:
    Determined's e2e tests compare `det task config` with the file they sent."""
    view = await generic_tasks.get(db, task_id)
    return GetGenericTaskConfigResponse(config=json.dumps(view.generic.config, sort_keys=True))


@post("/api/v1/tasks/{task_id:str}/kill", status_code=200)
async def kill_generic_task(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    task_id: TaskId,
    data: JSONBody[KillGenericTaskRequest | None] = None,
) -> Empty:
    """Kill the task and the tasks below it (`killFromRoot`: its whole tree)."""
    from_root = bool(data.kill_from_root) if data is not None else False
    await generic_tasks.kill(db, principal.user, task_id, ctx.clock(), from_root=from_root)
    return Empty()


@post("/api/v1/tasks/{task_id:str}/pause", status_code=200)
async def pause_generic_task(db: Db, principal: Caller, ctx: Ctx, task_id: TaskId) -> Empty:
    """Pause: a running task's container is killed and the task waits, open, for an unpause."""
    await generic_tasks.pause(db, principal.user, task_id, ctx.clock())
    return Empty()


@post("/api/v1/tasks/{task_id:str}/unpause", status_code=200)
async def unpause_generic_task(db: Db, principal: Caller, ctx: Ctx, task_id: TaskId) -> Empty:
    """Queue a paused task again."""
    await generic_tasks.unpause(db, principal.user, task_id, ctx.clock())
    return Empty()


ROUTES = [
    create_generic_task,
    get_generic_task_config,
    kill_generic_task,
    pause_generic_task,
    unpause_generic_task,
]
