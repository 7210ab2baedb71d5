"""Command use cases: launch (`det cmd run`), list, get, kill, the end of a run, its launch spec.

A command is a Task (type COMMAND) with a Job (so it queues like an experiment) and a
`commands` row holding its config and context directory. The scheduling loop places it once;
`after_exit` ends it when that allocation ends, whatever the exit code (commands never
restart). A kill while it runs sets TERMINATING; the pool loop then sends SIGKILL, as for
killed trials.
"""

from __future__ import annotations

import asyncio
import shlex
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import Mount
from controlplane.api.schemas.commands import CommandConfig, validate_command_config
from controlplane.api.schemas.expconf import (
    DEFAULT_IMAGE,
    ExperimentConfigError,
    load_yaml_mapping,
    merge_configs,
)
from controlplane.db.models import (
    Allocation,
    Command,
    Job,
    StateChange,
    Task,
    Template,
    User,
    Workspace,
)
from controlplane.domain import config_policies as policy_rules
from controlplane.domain.command_names import default_description
from controlplane.domain.command_states import (
    CommandState,
    check_command_transition,
    command_after_exit,
    is_pause_exit,
    state_after_exit,
)
from controlplane.domain.context_archive import ContextArchiveError, pack_context, parse_wire_files
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied
from controlplane.domain.trial_exit import AllocationExit
from controlplane.services import config_policies, jobs, workspace_pools
from controlplane.services.launch_spec import LaunchSpec
from controlplane.services.pool_catalog import PoolCatalog
from controlplane.services.rbac_scopes import check_placement, in_workspaces
from controlplane.services.reschedule import mark_arrival, mark_reschedule
from controlplane.services.workspaces import default_pool, not_deleting

TASK_TYPE = "COMMAND"
# How Determined names each kind of command in its default descriptions.
DISPLAY_NAMES = {
    "COMMAND": "Command",
    "NOTEBOOK": "JupyterLab",
    "TENSORBOARD": "TensorBoard",
    "SHELL": "Shell",
    "GENERIC": "Generic Task",
}
DEFAULT_WORKSPACE_ID = 1
DEFAULT_PRIORITY = 42
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


@dataclass(frozen=True)
class NewCommand:
    """`POST /api/v1/commands` as the real client sends it (a raw dict, not a binding)."""

    config: dict[str, Any] | str
    files: list[dict[str, Any]] = field(default_factory=list)
    template: str | None = None
    workspace_id: int | None = None
    # Notebooks, TensorBoards and shells are commands of another task type whose entrypoint the
    # master sets (services/interactive.py); `private_key` is a shell's.
    task_type: str = TASK_TYPE
    entrypoint: tuple[str, ...] = ()
    private_key: str | None = None


@dataclass(frozen=True)
class CommandSummary:
    """A command as the API shows it. Lists read it as plain columns (no ORM objects): they
    are polled, and building ORM objects was most of their cost."""

    task_id: str
    description: str
    state: str
    exit_status: str | None
    exit_code: int | None
    workspace_id: int
    entrypoint: list[str]
    start_time: datetime | None
    end_time: datetime | None
    owner_id: int
    job_id: str | None
    username: str
    resource_pool: str
    # The live allocation's state (None: queued, or ended).
    allocation_state: str | None


@dataclass(frozen=True)
class CommandView:
    command: Command
    task: Task
    username: str
    resource_pool: str
    # The live allocation's state (None: queued, or ended).
    allocation_state: str | None

    def summary(self) -> CommandSummary:
        cmd, task = self.command, self.task
        return CommandSummary(
            task_id=cmd.task_id,
            description=cmd.description,
            state=cmd.state,
            exit_status=cmd.exit_status,
            exit_code=cmd.exit_code,
            workspace_id=cmd.workspace_id,
            entrypoint=describe_argv(cmd.config),
            start_time=task.start_time,
            end_time=task.end_time,
            owner_id=task.owner_id,
            job_id=task.job_id,
            username=self.username,
            resource_pool=self.resource_pool,
            allocation_state=self.allocation_state,
        )


def _record(
    session: AsyncSession, task_id: str, old: str | None, new: str, why: str, now: datetime
) -> None:
    session.add(
        StateChange(
            entity="command", entity_id=task_id, from_state=old, to_state=new, reason=why, at=now
        )
    )


def move(
    session: AsyncSession, cmd: Command, target: CommandState, now: datetime, detail: str = ""
) -> None:
    """Move a command (or generic task) along the transition table and record the edge."""
    current = CommandState(cmd.state)
    why = check_command_transition(current, target, f"command {cmd.task_id}")
    cmd.state = target.value
    reason = f"{why}: {detail}" if detail else why
    _record(session, cmd.task_id, current.value, target.value, reason, now)


# --- launch ------------------------------------------------------------------------------------


async def _raw_config(session: AsyncSession, req: NewCommand) -> dict[str, Any]:
    if isinstance(req.config, str):
        data, _ = await asyncio.to_thread(load_yaml_mapping, req.config)
    elif isinstance(req.config, dict):
        data = dict(req.config)
    else:
        raise InvalidArgument("config must be a JSON object (or YAML text)")
    if req.template:
        template = await session.get(Template, req.template)
        if template is None:
            raise NotFound(f"template '{req.template}' not found")
        # Templates are written for experiments: only the keys a command has apply to it.
        known = {k: v for k, v in template.config.items() if k in CommandConfig.model_fields}
        data = merge_configs(data, known)
    return data


def _image_map(image: Any) -> dict[str, str]:
    current = image if isinstance(image, dict) else {}
    return {kind: current.get(kind) or DEFAULT_IMAGE for kind in ("cpu", "cuda", "rocm")}


def _expanded(
    cfg: CommandConfig, task_id: str, pool: str, priority: int, task_type: str
) -> dict[str, Any]:
    out: dict[str, Any] = cfg.model_dump(mode="json")
    kind = DISPLAY_NAMES.get(task_type, "Command")
    out["description"] = cfg.description or default_description(task_id, kind)
    out["resources"] = {**out["resources"], "resource_pool": pool, "priority": priority}
    out["environment"]["image"] = _image_map(out["environment"].get("image"))
    if out["environment"].get("python") is None:  # Resolute's key: absent unless set
        out["environment"].pop("python", None)
    return out


def _resolve_pool(
    pools: PoolCatalog | None, cfg: CommandConfig, workspace: Workspace
) -> tuple[str, int]:
    slots = cfg.resources.slots
    # The config's pool, else the workspace's default, else the cluster's.
    requested = cfg.resources.resource_pool or default_pool(workspace, slots)
    if pools is None:
        return requested or "default", DEFAULT_PRIORITY
    pool = pools.resolve_pool(requested, slots)
    pools.check_fits(pool, slots)
    return pool, pools.default_priority(pool)


async def _archive(files: list[dict[str, Any]]) -> tuple[bytes | None, int]:
    if not files:
        return None, 0
    try:
        # Decoding and compressing up to 95 MiB is CPU work: keep it off the event loop.
        parsed = await asyncio.to_thread(parse_wire_files, files)
        return await asyncio.to_thread(pack_context, parsed), len(parsed)
    except ContextArchiveError as exc:
        raise InvalidArgument(f"invalid context directory: {exc}") from exc


async def launch(
    session: AsyncSession,
    owner: User,
    req: NewCommand,
    pools: PoolCatalog | None,
    *,
    now: datetime,
) -> CommandView:
    """Validate, store and queue a command; the scheduling loop places it."""
    kind = req.task_type.lower()
    workspace_id = req.workspace_id or DEFAULT_WORKSPACE_ID
    workspace = await session.get(Workspace, workspace_id)
    if workspace is None:
        raise NotFound(f"workspace {workspace_id} not found")
    policy = await config_policies.effective(session, workspace_id, "NTSC")
    try:
        # YAML text that is no mapping fails in _raw_config, the keys in validate_command_config.
        raw = policy_rules.apply_invariant(await _raw_config(session, req), policy)
        if req.entrypoint:
            raw["entrypoint"] = list(req.entrypoint)
        cfg = validate_command_config(raw)
    except ExperimentConfigError as exc:
        raise InvalidArgument(f"invalid {kind} config:\n{exc}") from exc
    policy_rules.check(raw, policy)
    not_deleting("workspace", workspace)
    check_placement(session, workspace.id)  # RBAC: the workspace it lands in, default or named
    pool, default_priority = _resolve_pool(pools, cfg, workspace)
    await workspace_pools.check_available(session, pool, workspace)
    archive, num_files = await _archive(req.files)
    task_id = str(uuid.uuid4())
    priority = cfg.resources.priority or default_priority
    config = _expanded(cfg, task_id, pool, priority, req.task_type)
    job_id = str(uuid.uuid4())
    task = Task(
        task_id=task_id,
        task_type=req.task_type,
        job_id=job_id,
        slots=cfg.resources.slots,
        single_node=bool(cfg.resources.is_single_node),
        owner_id=owner.id,
        start_time=now,
    )
    session.add(task)
    session.add(
        jobs.new_job(
            job_id=job_id,
            job_type=req.task_type,
            owner=owner,
            name=config["description"],
            entity_id=task_id,
            workspace_id=workspace_id,
            resource_pool=pool,
            priority=cfg.resources.priority,
            weight=float(cfg.resources.weight),
            max_slots=cfg.resources.max_slots,
            now=now,
        )
    )
    await session.flush()
    cmd = Command(
        task_id=task_id,
        workspace_id=workspace_id,
        description=config["description"],
        state=CommandState.ACTIVE.value,
        config=config,
        context=archive,
        context_files=num_files,
        private_key=req.private_key,
    )
    session.add(cmd)
    _record(session, task_id, None, CommandState.ACTIVE.value, "launched", now)
    mark_arrival(session, pool, task.slots)
    return CommandView(cmd, task, owner.username, pool, None)


# --- reads -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandFilter:
    usernames: tuple[str, ...] = ()
    user_ids: tuple[int, ...] = ()
    workspace_id: int | None = None
    task_type: str = TASK_TYPE
    # Under RBAC, the workspaces the caller may view (None: every workspace).
    workspaces: frozenset[int] | None = None


def _views_query(*columns: Any) -> Any:
    live = and_(Allocation.task_id == Command.task_id, Allocation.end_time.is_(None))
    return (
        select(*columns)
        .select_from(Command)
        .join(Task, Task.task_id == Command.task_id)
        .join(User, User.id == Task.owner_id)
        .outerjoin(Job, Job.job_id == Task.job_id)
        .outerjoin(Allocation, live)
    )


def _pool_of(pool: str | None, config: dict[str, Any]) -> str:
    return pool or str((config.get("resources") or {}).get("resource_pool") or "")


def _view(row: Any) -> CommandView:
    cmd, task, username, pool, alloc_state = row
    return CommandView(cmd, task, username, _pool_of(pool, cmd.config), alloc_state)


_SUMMARY_COLUMNS = (
    Command.task_id,
    Command.description,
    Command.state,
    Command.exit_status,
    Command.exit_code,
    Command.workspace_id,
    Command.config,
    Task.start_time,
    Task.end_time,
    Task.owner_id,
    Task.job_id,
    User.username,
    Job.resource_pool,
    Allocation.state,
)


def _summary(row: Any) -> CommandSummary:
    (task_id, description, state, exit_status, exit_code, workspace_id, config) = row[:7]
    start_time, end_time, owner_id, job_id, username, pool, alloc_state = row[7:]
    return CommandSummary(
        task_id=task_id,
        description=description,
        state=state,
        exit_status=exit_status,
        exit_code=exit_code,
        workspace_id=workspace_id,
        entrypoint=describe_argv(config),
        start_time=start_time,
        end_time=end_time,
        owner_id=owner_id,
        job_id=job_id,
        username=username,
        resource_pool=_pool_of(pool, config),
        allocation_state=alloc_state,
    )


async def list_commands(
    session: AsyncSession, f: CommandFilter, *, offset: int, limit: int
) -> tuple[list[CommandSummary], int]:
    """Commands oldest first; `limit` -1 means all."""
    conditions: list[Any] = [Task.task_type == f.task_type]
    if f.usernames or f.user_ids:
        conditions.append(or_(User.username.in_(f.usernames), User.id.in_(f.user_ids)))
    if f.workspace_id:
        conditions.append(Command.workspace_id == f.workspace_id)
    if f.workspaces is not None:
        conditions.append(in_workspaces(Command.workspace_id, f.workspaces))
    query = _views_query(*_SUMMARY_COLUMNS).where(*conditions)
    query = query.order_by(Task.start_time, Task.task_id).offset(offset)
    if limit >= 0:
        query = query.limit(limit)
    found = [_summary(row) for row in (await session.execute(query)).all()]
    if (limit < 0 or len(found) < limit) and (found or offset == 0):
        return found, offset + len(found)  # the page reached the end: no count needed
    count_q = select(func.count(Command.task_id)).join(Task, Task.task_id == Command.task_id)
    count_q = count_q.join(User, User.id == Task.owner_id).where(*conditions)
    return found, await session.scalar(count_q) or 0


async def get_command(
    session: AsyncSession, task_id: str, task_type: str = TASK_TYPE
) -> CommandView:
    query = _views_query(Command, Task, User.username, Job.resource_pool, Allocation.state)
    query = query.where(Command.task_id == task_id, Task.task_type == task_type)
    row = (await session.execute(query)).first()
    if row is None:
        raise NotFound(f"{task_type.lower()} {task_id} not found")
    return _view(row)


# --- kill and exit -----------------------------------------------------------------------------


async def kill(
    session: AsyncSession, user: User, task_id: str, now: datetime, task_type: str = TASK_TYPE
) -> CommandView:
    """Idempotent. Queued: ends at once. Running: TERMINATING, and the pool loop kills it."""
    view = await get_command(session, task_id, task_type)
    cmd, task = view.command, view.task
    kind = task_type.lower()
    if not (user.admin or user.id == task.owner_id):
        raise PermissionDenied(f"only the owner of {kind} {task_id} or an admin may kill it")
    if cmd.state != CommandState.ACTIVE:
        return view
    if view.allocation_state is None:
        move(session, cmd, CommandState.TERMINATED, now, "killed while queued")
        cmd.exit_status = "killed before it started"
        task.end_time = now
    else:
        move(session, cmd, CommandState.TERMINATING, now)
    mark_reschedule(session, view.resource_pool)
    return await get_command(session, task_id, task_type)


async def after_exit(
    session: AsyncSession, alloc: Allocation, ended: AllocationExit, now: datetime
) -> None:
    """The command's allocation ended: so does the command (never re-run; see module doc)."""
    cmd = await session.get(Command, alloc.task_id)
    if cmd is None or cmd.state == CommandState.TERMINATED:
        return
    current = CommandState(cmd.state)
    if is_pause_exit(current):  # a generic task's pause or unpause: the task stays open
        move(session, cmd, state_after_exit(current), now)
        if state_after_exit(current) is CommandState.ACTIVE:
            mark_reschedule(session, alloc.resource_pool)
        return
    outcome = command_after_exit(ended, killed=cmd.state == CommandState.TERMINATING)
    move(session, cmd, CommandState.TERMINATED, now, outcome.status)
    cmd.exit_code = outcome.exit_code
    cmd.exit_status = outcome.status
    task = await session.get(Task, alloc.task_id)
    if task is not None and task.end_time is None:
        task.end_time = now


# --- what the container runs -------------------------------------------------------------------


def memory_bytes(value: int | str | None) -> int | None:
    """Docker-style sizes ("4G", "512MiB", 1024): units are powers of 1024."""
    if value is None or isinstance(value, int):
        return value
    text = value.strip().lower().replace(" ", "").removesuffix("b").removesuffix("i")
    number, unit = (text[:-1], text[-1]) if text and text[-1] in _UNITS else (text, "")
    return int(float(number) * _UNITS[unit])


def entrypoint_argv(entrypoint: str | list[str]) -> tuple[str, ...]:
    """What the command's container runs, as Determined's command-entrypoint.sh decides: a single
    argument (a string, or a one-element list such as `det cmd run 'a; b'` sends) runs through
    `/bin/sh -c`; several arguments are exec'd as given."""
    if isinstance(entrypoint, str):
        return ("/bin/sh", "-c", entrypoint)
    if len(entrypoint) == 1:
        return ("/bin/sh", "-c", entrypoint[0])
    return tuple(entrypoint)


def _env_vars(entries: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in entries:
        name, _, value = entry.partition("=")
        out[name] = value
    return out


async def command_launch_spec(session: AsyncSession, task_id: str) -> LaunchSpec:
    """Image, argv, user environment, mounts and /dev/shm of a command's container.

    The image and variables are those for CUDA when the command asks for slots, for CPU when
    it runs zero-slot (Determined picks by the pool's device type; our pools' defaults are the
    same image for every type). The master adds the DET_* variables.
    """
    cmd = await session.get(Command, task_id)
    if cmd is None:
        raise NotFound(f"command {task_id} not found")
    config = cmd.config
    kind = "cuda" if int((config.get("resources") or {}).get("slots") or 0) > 0 else "cpu"
    environment = config.get("environment") or {}
    image = (environment.get("image") or {}).get(kind) or DEFAULT_IMAGE
    variables = (environment.get("environment_variables") or {}).get(kind) or []
    mounts = tuple(
        Mount(
            host_path=m["host_path"],
            container_path=m["container_path"],
            read_only=bool(m.get("read_only")),
        )
        for m in config.get("bind_mounts") or []
    )
    env = _env_vars(variables)
    if not cmd.context_files:
        env.setdefault("RESOLUTE_NO_CONTEXT", "1")  # the launcher skips asking for it
    return LaunchSpec(
        image=image,
        argv=entrypoint_argv(config["entrypoint"]),
        environment=env,
        mounts=mounts,
        shm_size_bytes=memory_bytes((config.get("resources") or {}).get("shm_size")),
        force_pull=bool(environment.get("force_pull_image")),
        python=environment.get("python") or "",
    )


def describe_argv(config: dict[str, Any]) -> list[str]:
    entrypoint = config.get("entrypoint") or []
    return list(entrypoint) if isinstance(entrypoint, list) else shlex.split(str(entrypoint))
