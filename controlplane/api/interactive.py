"""Notebooks, TensorBoards and shells (`det notebook|tensorboard|shell`), and what their tasks
report: the address their service answers on, and that it is ready."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Response, get, post
from litestar.params import JSONBody, Parameter, QueryParameter
from sqlalchemy import select

from controlplane.api import proxy_address
from controlplane.api.commands import command_out
from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Limit, Offset, UserIds, check_ids, clamp_limit
from controlplane.api.proxy_address import AllocationFacts
from controlplane.api.schemas.commands import SetPriorityRequest
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.interactive import (
    AgentUserGroup,
    AllocationProxyAddress,
    InteractiveTask,
    LaunchInteractiveRequest,
)
from controlplane.db.models import Allocation, Command
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied
from controlplane.domain.interactive import Kind
from controlplane.domain.rbac import Permission
from controlplane.services import commands, interactive, rbac_scopes, task_priority
from controlplane.services.commands import CommandView
from controlplane.services.principals import Principal

TaskId = Annotated[str, Parameter(max_length=128)]
AllocId = Annotated[str, Parameter(max_length=160)]
StrList = Annotated[list[str] | None, Parameter()]
# The wire's plural and singular names of each kind.
NAMES = {
    Kind.NOTEBOOK: ("notebooks", "notebook"),
    Kind.TENSORBOARD: ("tensorboards", "tensorboard"),
    Kind.SHELL: ("shells", "shell"),
}


def _out(
    view: CommandView, principal: Principal | None = None, private_key: str | None = None
) -> InteractiveTask:
    base = command_out(view.summary())
    config = view.command.config
    out = InteractiveTask(
        **base.model_dump(),
        service_address=interactive.service_address(view.command.task_id),
        experiment_ids=list(config.get("experiment_ids") or []),
        trial_ids=list(config.get("trial_ids") or []),
    )
    if view.task.task_type == Kind.SHELL and principal is not None:
        if principal.user.admin or principal.user.id == view.task.owner_id:
            out.private_key = private_key
        user = (config.get(interactive.SETTINGS_KEY) or {}).get("user") or ""
        out.agent_user_group = AgentUserGroup(user=user, group=user)
    return out


def _public(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != interactive.SETTINGS_KEY}


async def _launch(
    kind: Kind, data: LaunchInteractiveRequest, db: Db, principal: Caller, ctx: Ctx
) -> dict[str, Any]:
    ids = [*(data.experiment_ids or []), *(data.trial_ids or [])]
    check_ids(*ids)
    # Under RBAC a TensorBoard reads only what its user may view (as Determined).
    visible = principal.workspaces(Permission.VIEW_EXPERIMENT_ARTIFACTS)
    await rbac_scopes.require_experiments_in(db, list(data.experiment_ids or ()), visible)
    await rbac_scopes.require_trials_in(db, list(data.trial_ids or ()), visible)
    request = interactive.NewInteractive(
        kind=kind,
        config=data.config if data.config is not None else {},
        files=data.files or [],
        template=data.template_name,
        workspace_id=data.workspace_id or None,
        experiment_ids=tuple(data.experiment_ids or ()),
        trial_ids=tuple(data.trial_ids or ()),
    )
    # `--preview` validates and shows the expanded config; nothing is kept.
    savepoint = await db.begin_nested() if data.preview else None
    view = await interactive.launch(
        db, principal.user, request, ctx.scheduling, ctx.interactive, now=ctx.clock()
    )
    await db.flush()
    key = view.command.__dict__.get("private_key")  # set by this launch, never lazy-loaded
    out = _out(view, principal, key).model_dump(mode="json", by_alias=True, exclude_none=True)
    if savepoint is not None:
        await savepoint.rollback()
    return {NAMES[kind][1]: out, "config": _public(view.command.config), "warnings": []}


@post("/api/v1/notebooks", status_code=200)
async def launch_notebook(
    data: JSONBody[LaunchInteractiveRequest], db: Db, principal: Caller, ctx: Ctx
) -> dict[str, Any]:
    """Start JupyterLab; it answers at serviceAddress (`/proxy/{id}/`) once ready."""
    return await _launch(Kind.NOTEBOOK, data, db, principal, ctx)


@post("/api/v1/tensorboards", status_code=200)
async def launch_tensorboard(
    data: JSONBody[LaunchInteractiveRequest], db: Db, principal: Caller, ctx: Ctx
) -> dict[str, Any]:
    """Start TensorBoard over the event files of the given experiments' or trials'."""
    return await _launch(Kind.TENSORBOARD, data, db, principal, ctx)


@post("/api/v1/shells", status_code=200)
async def launch_shell(
    data: JSONBody[LaunchInteractiveRequest], db: Db, principal: Caller, ctx: Ctx
) -> dict[str, Any]:
    """Start an sshd reached through the proxy's WebSocket with the key in the response."""
    return await _launch(Kind.SHELL, data, db, principal, ctx)


async def _list(
    kind: Kind, db: Db, principal: Principal, users: list[str] | None,
    user_ids: list[int] | None, workspace_id: int | None, offset: int, limit: int,
) -> dict[str, Any]:  # fmt: skip
    check_ids(*(user_ids or []))
    page = clamp_limit(limit, default=-1)
    found, total = await commands.list_commands(
        db,
        commands.CommandFilter(
            usernames=tuple(users or ()),
            user_ids=tuple(user_ids or ()),
            workspace_id=workspace_id or None,
            task_type=kind.value,
            workspaces=principal.workspaces(Permission.VIEW_NSC),
        ),
        offset=offset,
        limit=page,
    )
    # A TensorBoard's experiment and trial ids live in its config, which the summaries skip.
    configs: dict[str, dict[str, Any]] = {}
    if kind is Kind.TENSORBOARD and found:
        rows = await db.execute(
            select(Command.task_id, Command.config).where(
                Command.task_id.in_([s.task_id for s in found])
            )
        )
        configs = {task_id: config or {} for task_id, config in rows.all()}
    items = []
    for s in found:
        base = command_out(s).model_dump()
        config = configs.get(s.task_id, {})
        item = InteractiveTask(
            **base,
            service_address=interactive.service_address(s.task_id),
            experiment_ids=list(config.get("experiment_ids") or []),
            trial_ids=list(config.get("trial_ids") or []),
        )
        items.append(item.model_dump(mode="json", by_alias=True, exclude_none=True))
    pagination = Pagination.of(offset, page, len(found), total)
    return {NAMES[kind][0]: items, "pagination": pagination.model_dump(mode="json", by_alias=True)}


WorkspaceQ = Annotated[int | None, QueryParameter(name="workspaceId", ge=0, le=2**31 - 1)]


@get("/api/v1/notebooks")
async def list_notebooks(
    db: Db, principal: Caller, users: StrList = None, user_ids: UserIds = None,
    workspace_id: WorkspaceQ = None, offset: Offset = 0, limit: Limit = 0,
) -> dict[str, Any]:  # fmt: skip
    return await _list(Kind.NOTEBOOK, db, principal, users, user_ids, workspace_id, offset, limit)


@get("/api/v1/tensorboards")
async def list_tensorboards(
    db: Db, principal: Caller, users: StrList = None, user_ids: UserIds = None,
    workspace_id: WorkspaceQ = None, offset: Offset = 0, limit: Limit = 0,
) -> dict[str, Any]:  # fmt: skip
    return await _list(
        Kind.TENSORBOARD, db, principal, users, user_ids, workspace_id, offset, limit
    )


@get("/api/v1/shells")
async def list_shells(
    db: Db, principal: Caller, users: StrList = None, user_ids: UserIds = None,
    workspace_id: WorkspaceQ = None, offset: Offset = 0, limit: Limit = 0,
) -> dict[str, Any]:  # fmt: skip
    return await _list(Kind.SHELL, db, principal, users, user_ids, workspace_id, offset, limit)


async def _one(kind: Kind, db: Db, principal: Principal, task_id: str) -> dict[str, Any]:
    view = await commands.get_command(db, task_id, kind.value)
    key = None
    if kind is Kind.SHELL:  # deferred: read on its own (async sessions never lazy-load)
        key = await db.scalar(select(Command.private_key).where(Command.task_id == task_id))
    out = _out(view, principal, key).model_dump(mode="json", by_alias=True, exclude_none=True)
    return {NAMES[kind][1]: out, "config": _public(view.command.config)}


@get("/api/v1/notebooks/{notebook_id:str}")
async def get_notebook(db: Db, principal: Caller, notebook_id: TaskId) -> dict[str, Any]:
    return await _one(Kind.NOTEBOOK, db, principal, notebook_id)


@get("/api/v1/tensorboards/{tensorboard_id:str}")
async def get_tensorboard(db: Db, principal: Caller, tensorboard_id: TaskId) -> dict[str, Any]:
    return await _one(Kind.TENSORBOARD, db, principal, tensorboard_id)


@get("/api/v1/shells/{shell_id:str}")
async def get_shell(db: Db, principal: Caller, shell_id: TaskId) -> dict[str, Any]:
    return await _one(Kind.SHELL, db, principal, shell_id)


async def _kill(kind: Kind, db: Db, principal: Principal, ctx: Any, task_id: str) -> dict:
    view = await commands.kill(db, principal.user, task_id, ctx.clock(), kind.value)
    out = _out(view).model_dump(mode="json", by_alias=True, exclude_none=True)
    return {NAMES[kind][1]: out}


@post("/api/v1/notebooks/{notebook_id:str}/kill", status_code=200)
async def kill_notebook(db: Db, principal: Caller, ctx: Ctx, notebook_id: TaskId) -> dict:
    return await _kill(Kind.NOTEBOOK, db, principal, ctx, notebook_id)


@post("/api/v1/tensorboards/{tensorboard_id:str}/kill", status_code=200)
async def kill_tensorboard(db: Db, principal: Caller, ctx: Ctx, tensorboard_id: TaskId) -> dict:
    return await _kill(Kind.TENSORBOARD, db, principal, ctx, tensorboard_id)


@post("/api/v1/shells/{shell_id:str}/kill", status_code=200)
async def kill_shell(db: Db, principal: Caller, ctx: Ctx, shell_id: TaskId) -> dict:
    return await _kill(Kind.SHELL, db, principal, ctx, shell_id)


async def _set_priority(
    kind: Kind, db: Db, principal: Principal, ctx: Any, task_id: str, priority: int
) -> dict:
    view = await task_priority.set_priority(
        db, principal.user, task_id, kind.value, priority, ctx.scheduling
    )
    out = _out(view).model_dump(mode="json", by_alias=True, exclude_none=True)
    return {NAMES[kind][1]: out}


@post("/api/v1/notebooks/{notebook_id:str}/set_priority", status_code=200)
async def set_notebook_priority(
    data: JSONBody[SetPriorityRequest], db: Db, principal: Caller, ctx: Ctx, notebook_id: TaskId
) -> dict:
    return await _set_priority(Kind.NOTEBOOK, db, principal, ctx, notebook_id, data.priority)


@post("/api/v1/tensorboards/{tensorboard_id:str}/set_priority", status_code=200)
async def set_tensorboard_priority(
    data: JSONBody[SetPriorityRequest], db: Db, principal: Caller, ctx: Ctx, tensorboard_id: TaskId
) -> dict:
    return await _set_priority(Kind.TENSORBOARD, db, principal, ctx, tensorboard_id, data.priority)


@post("/api/v1/shells/{shell_id:str}/set_priority", status_code=200)
async def set_shell_priority(
    data: JSONBody[SetPriorityRequest], db: Db, principal: Caller, ctx: Ctx, shell_id: TaskId
) -> dict:
    return await _set_priority(Kind.SHELL, db, principal, ctx, shell_id, data.priority)


# --- what the task reports ---------------------------------------------------------------------


async def _own_live_allocation(db: Db, principal: Principal, allocation_id: str) -> Allocation:
    if principal.allocation is None or principal.allocation.allocation_id != allocation_id:
        raise PermissionDenied(f"only allocation {allocation_id}'s own task may report this")
    alloc = await db.get(Allocation, allocation_id)
    if alloc is None:
        raise NotFound(f"allocation {allocation_id} not found")
    if alloc.end_time is not None:
        raise InvalidArgument(f"allocation {allocation_id} has ended")
    return alloc


def _check_address(value: str) -> str:
    """The syntax alone (host:port); `proxy_address.check` decides whether this task may."""
    if proxy_address.parse(value) is None:
        raise InvalidArgument(
            f"proxyAddress must be host:port (a host name or IPv4), got {value!r}"
        )
    return value


async def allocation_facts(db: Db, registry: Any, alloc: Allocation) -> AllocationFacts:
    """Its agents' addresses (from the registry of connected agents) and its task's ports."""
    config = await db.scalar(select(Command.config).where(Command.task_id == alloc.task_id))
    handles = [registry.get(agent_id) for agent_id in (alloc.placement or {})]
    hosts = proxy_address.agent_hosts(h.addresses if h is not None else None for h in handles)
    return AllocationFacts.of(alloc.task_id, hosts, config)


@post("/api/v1/allocations/{allocation_id:str}/proxy_address", status_code=200)
async def post_proxy_address(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    allocation_id: AllocId,
    data: JSONBody[AllocationProxyAddress],
) -> Response[dict[str, Any]]:
    """The task's service answers at this host:port; the proxy forwards there. Only the task's
    own agent's address and a port the task was given or declared (`proxy_address.check`)."""
    alloc = await _own_live_allocation(db, principal, allocation_id)
    _check_address(data.proxy_address)
    facts = await allocation_facts(db, ctx.scheduling.registry, alloc)
    verdict = proxy_address.check(data.proxy_address, facts)
    if not verdict.allowed:
        raise (InvalidArgument if verdict.status == 400 else PermissionDenied)(verdict.reason)
    alloc.proxy_address = data.proxy_address
    alloc.proxy_secret = data.proxy_secret
    return Response({})


@post("/api/v1/allocations/{allocation_id:str}/ready", status_code=200)
async def post_allocation_ready(
    db: Db, principal: Caller, allocation_id: AllocId
) -> Response[dict[str, Any]]:
    """The task's service answers: `det notebook start` and friends stop waiting."""
    alloc = await _own_live_allocation(db, principal, allocation_id)
    alloc.ready = True
    return Response({})


ROUTES = [
    launch_notebook, launch_tensorboard, launch_shell,
    list_notebooks, list_tensorboards, list_shells,
    get_notebook, get_tensorboard, get_shell,
    kill_notebook, kill_tensorboard, kill_shell,
    set_notebook_priority, set_tensorboard_priority, set_shell_priority,
    post_proxy_address, post_allocation_ready,
]  # fmt: skip
