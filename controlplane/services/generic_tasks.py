"""Generic tasks (`det task create|config|fork|kill|pause|unpause`, /api/v1/generic-tasks).

A generic task is a command of task type GENERIC (services/commands.py queues, places, logs and
ends it) plus a `generic_tasks` row: its project, the task it was forked from, its parent, the
config as sent, and whether it may be paused. A pause kills a running container and leaves the
task open in PAUSED, out of the queue; an unpause queues it again for a new allocation. Pause,
unpause and kill reach the task and every task below it (a kill with `killFromRoot`: the whole
tree it is in), as Determined's do.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.schemas.expconf import ExperimentConfigError, load_yaml_mapping, merge_configs
from controlplane.db.models import Command, GenericTask, Project, Task, User
from controlplane.domain.command_states import CommandState
from controlplane.domain.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from controlplane.domain.generic_tasks import (
    MAX_DEPTH,
    GenericTaskState,
    generic_state,
    kill_target,
    pause_target,
    root_of,
    subtree,
    unpause_target,
)
from controlplane.services import commands
from controlplane.services.pool_catalog import PoolCatalog
from controlplane.services.reschedule import mark_arrival, mark_reschedule

TASK_TYPE = "GENERIC"


@dataclass(frozen=True)
class NewGenericTask:
    """v1CreateGenericTaskRequest."""

    config: str
    files: list[dict[str, Any]] = field(default_factory=list)
    project_id: int | None = None
    forked_from: str | None = None
    parent_id: str | None = None
    inherit_context: bool = False
    no_pause: bool = False


@dataclass(frozen=True)
class GenericTaskView:
    task: Task
    command: Command
    generic: GenericTask

    @property
    def state(self) -> GenericTaskState:
        cmd = self.command
        return generic_state(CommandState(cmd.state), cmd.exit_code, is_killed(cmd.exit_status))


def is_killed(exit_status: str | None) -> bool:
    """Whether the command machinery ended the task on a kill (its exit statuses say so)."""
    return bool(exit_status) and str(exit_status).startswith("killed")


async def _parse(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data, _ = await asyncio.to_thread(load_yaml_mapping, text)
    except ExperimentConfigError as exc:
        raise InvalidArgument(f"invalid generic task config:\n{exc}") from exc
    return data


async def _row(session: AsyncSession, task_id: str) -> GenericTask:
    row = await session.get(GenericTask, task_id)
    if row is None:
        raise NotFound(f"generic task {task_id} not found")
    return row


async def _context_of(session: AsyncSession, task_id: str) -> tuple[bytes | None, int]:
    """The packed context directory of a task (deferred on the command row)."""
    row = (
        await session.execute(
            select(Command.context, Command.context_files).where(Command.task_id == task_id)
        )
    ).first()
    return (row[0], row[1]) if row is not None else (None, 0)


async def create(
    session: AsyncSession,
    owner: User,
    req: NewGenericTask,
    pools: PoolCatalog | None,
    *,
    now: datetime,
) -> GenericTaskView:
    """Validate, store and queue a generic task (a fork starts from its source's config and,
    when none is sent, its context directory; `inheritContext` takes the parent's)."""
    config = await _parse(req.config)
    inherited: str | None = None
    if req.forked_from:
        source = await _row(session, req.forked_from)
        config = merge_configs(config, source.config)
        inherited = None if req.files else req.forked_from
    if req.parent_id:
        await _row(session, req.parent_id)
        if req.inherit_context and not req.files:
            inherited = req.parent_id
    elif req.inherit_context:
        raise InvalidArgument("inheritContext needs a parentId")
    workspace_id = None
    if req.project_id is not None:
        project = await session.get(Project, req.project_id)
        if project is None:
            raise NotFound(f"project {req.project_id} not found")
        workspace_id = project.workspace_id
    new = commands.NewCommand(
        config=config, files=req.files, workspace_id=workspace_id, task_type=TASK_TYPE
    )
    view = await commands.launch(session, owner, new, pools, now=now)
    if inherited is not None:
        view.command.context, view.command.context_files = await _context_of(session, inherited)
    generic = GenericTask(
        task_id=view.task.task_id,
        project_id=req.project_id,
        forked_from=req.forked_from,
        parent_id=req.parent_id,
        config=config,
        no_pause=req.no_pause,
    )
    session.add(generic)
    return GenericTaskView(view.task, view.command, generic)


async def get(session: AsyncSession, task_id: str) -> GenericTaskView:
    view = await commands.get_command(session, task_id, TASK_TYPE)
    return GenericTaskView(view.task, view.command, await _row(session, task_id))


def _check_owner(user: User, task: Task, verb: str) -> None:
    if not (user.admin or user.id == task.owner_id):
        raise PermissionDenied(f"only the owner of task {task.task_id} or an admin may {verb} it")


async def pause(session: AsyncSession, user: User, task_id: str, now: datetime) -> list[str]:
    """Pause the task and the tasks below it (those created with noPause, or ended, are left
    as they are); returns the ids paused. Idempotent. Queued: PAUSED at once. Running:
    PAUSING; the pool loop kills its container and its end leaves the task PAUSED
    (scheduling/command_exit)."""
    generic = await _row(session, task_id)
    reached = await _tree(session, task_id, from_root=False)
    moved = []
    for tid in reached:
        view = await commands.get_command(session, tid, TASK_TYPE)
        _check_owner(user, view.task, "pause")
        row = generic if tid == task_id else await _row(session, tid)
        try:
            target = pause_target(
                CommandState(view.command.state),
                running=view.allocation_state is not None,
                no_pause=row.no_pause,
                what=f"task {tid}",
            )
        except Conflict:
            if tid == task_id:
                raise
            continue  # a child that cannot be paused keeps its state, as in Determined
        if target is not None:
            commands.move(session, view.command, target, now, "paused by user request")
            mark_reschedule(session, view.resource_pool)
            moved.append(tid)
    return moved


async def unpause(session: AsyncSession, user: User, task_id: str, now: datetime) -> list[str]:
    """Queue the task and the paused tasks below it again; returns the ids unpaused.
    Idempotent. One whose container is still being stopped is queued when it ends."""
    await _row(session, task_id)
    reached = await _tree(session, task_id, from_root=False)
    moved = []
    for tid in reached:
        view = await commands.get_command(session, tid, TASK_TYPE)
        _check_owner(user, view.task, "unpause")
        try:
            target = unpause_target(CommandState(view.command.state), what=f"task {tid}")
        except Conflict:
            if tid == task_id:
                raise
            continue
        if target is not None:
            commands.move(session, view.command, target, now, "unpaused by user request")
            mark_arrival(session, view.resource_pool, view.task.slots)
            moved.append(tid)
    return moved


async def _tree(session: AsyncSession, task_id: str, from_root: bool) -> list[str]:
    """The tasks a kill reaches: `task_id`'s subtree, or its whole tree's (`from_root`)."""
    parents: dict[str, str | None] = {}
    top = task_id
    if from_root:
        for _ in range(MAX_DEPTH):
            row = await session.get(GenericTask, top)
            parents[top] = row.parent_id if row is not None else None
            if parents[top] is None:
                break
            top = str(parents[top])
        top = root_of(task_id, parents)
    level = [top]
    for _ in range(MAX_DEPTH):
        if not level:
            break
        rows = await session.execute(
            select(GenericTask.task_id, GenericTask.parent_id).where(
                GenericTask.parent_id.in_(level)
            )
        )
        found = {child: parent for child, parent in rows.all() if child not in parents}
        parents.update(found)
        level = list(found)
    return subtree(top, parents)


async def kill(
    session: AsyncSession, user: User, task_id: str, now: datetime, *, from_root: bool = False
) -> list[str]:
    """Kill the task and every task below it; returns the ids reached. Idempotent: an ended
    task is left as it is. Queued or paused tasks end at once; running ones go TERMINATING
    and the pool loop kills their containers."""
    await get(session, task_id)  # 404 before anything else
    reached = await _tree(session, task_id, from_root)
    for tid in reached:
        view = await commands.get_command(session, tid, TASK_TYPE)
        _check_owner(user, view.task, "kill")
        decision = kill_target(
            CommandState(view.command.state), running=view.allocation_state is not None
        )
        if decision is None:
            continue
        target, status = decision
        commands.move(session, view.command, target, now, "killed by user request")
        if status is not None:
            view.command.exit_status = status
            view.task.end_time = now
        mark_reschedule(session, view.resource_pool)
    return reached
