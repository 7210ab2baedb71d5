"""Commands (`det cmd`): launch, list, describe, kill."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from litestar import get, post
from litestar.params import JSONBody, Parameter, QueryParameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Limit, Offset, UserIds, check_ids, clamp_limit
from controlplane.api.schemas.commands import (
    Command,
    GetCommandResponse,
    GetCommandsResponse,
    KillCommandResponse,
    LaunchCommandRequest,
    LaunchCommandResponse,
    SetCommandPriorityResponse,
    SetPriorityRequest,
    TaskState,
)
from controlplane.api.schemas.common import Pagination
from controlplane.domain.command_states import CommandState, wire_state
from controlplane.domain.rbac import Permission
from controlplane.services import commands, task_priority

TaskId = Annotated[str, Parameter(max_length=128)]
StrList = Annotated[list[str] | None, Parameter()]


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def command_out(c: commands.CommandSummary) -> Command:
    return Command(
        id=c.task_id,
        description=c.description,
        state=TaskState(wire_state(CommandState(c.state), c.allocation_state)),
        start_time=_time(c.start_time) or "",
        end_time=_time(c.end_time),
        username=c.username,
        user_id=c.owner_id,
        resource_pool=c.resource_pool,
        exit_status=c.exit_status or "",
        job_id=c.job_id or "",
        workspace_id=c.workspace_id,
        exit_code=c.exit_code,
        entrypoint=c.entrypoint,
    )


@post("/api/v1/commands", status_code=200)
async def launch_command(
    data: JSONBody[LaunchCommandRequest], db: Db, principal: Caller, ctx: Ctx
) -> LaunchCommandResponse:
    """Queue a command; its logs are at GET /api/v1/tasks/{id}/logs."""
    view = await commands.launch(
        db,
        principal.user,
        commands.NewCommand(
            config=data.config,
            files=data.files or [],
            template=data.template_name,
            workspace_id=data.workspace_id or None,
        ),
        ctx.scheduling,
        now=ctx.clock(),
    )
    return LaunchCommandResponse(command=command_out(view.summary()), config=view.command.config)


@get("/api/v1/commands")
async def list_commands(
    db: Db,
    principal: Caller,
    users: StrList = None,
    user_ids: UserIds = None,
    workspace_id: Annotated[
        int | None, QueryParameter(name="workspaceId", ge=0, le=2**31 - 1)
    ] = None,
    offset: Offset = 0,
    limit: Limit = 0,
) -> GetCommandsResponse:
    check_ids(*(user_ids or []))
    page = clamp_limit(limit, default=-1)
    found, total = await commands.list_commands(
        db,
        commands.CommandFilter(
            usernames=tuple(users or ()),
            user_ids=tuple(user_ids or ()),
            workspace_id=workspace_id or None,
            workspaces=principal.workspaces(Permission.VIEW_NSC),
        ),
        offset=offset,
        limit=page,
    )
    return GetCommandsResponse(
        commands=[command_out(v) for v in found],
        pagination=Pagination.of(offset, page, len(found), total),
    )


@get("/api/v1/commands/{command_id:str}")
async def get_command(db: Db, principal: Caller, command_id: TaskId) -> GetCommandResponse:
    view = await commands.get_command(db, command_id)
    return GetCommandResponse(command=command_out(view.summary()), config=view.command.config)


@post("/api/v1/commands/{command_id:str}/kill", status_code=200)
async def kill_command(
    db: Db, principal: Caller, ctx: Ctx, command_id: TaskId
) -> KillCommandResponse:
    """Records the kill; a running command's container gets SIGKILL from the pool loop."""
    view = await commands.kill(db, principal.user, command_id, ctx.clock())
    return KillCommandResponse(command=command_out(view.summary()))


@post("/api/v1/commands/{command_id:str}/set_priority", status_code=200)
async def set_command_priority(
    data: JSONBody[SetPriorityRequest], db: Db, principal: Caller, ctx: Ctx, command_id: TaskId
) -> SetCommandPriorityResponse:
    """`det cmd set priority`: the command's job takes the new priority."""
    view = await task_priority.set_priority(
        db, principal.user, command_id, commands.TASK_TYPE, data.priority, ctx.scheduling
    )
    return SetCommandPriorityResponse(command=command_out(view.summary()))


ROUTES = [launch_command, list_commands, get_command, kill_command, set_command_priority]
