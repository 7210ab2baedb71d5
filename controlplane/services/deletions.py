"""Deleting a workspace or project with everything in it, as Determined 0.38 does.

`DELETE /api/v1/workspaces/{id}` (or projects) checks what may not go (experiments that have not
ended, checkpoints registered as model versions or protected, running notebooks, shells,
commands or TensorBoards, models in the workspace) and refuses with the reasons. An empty one
goes at once (`completed: true`); otherwise it is marked DELETING (`completed: false`) and the
periodic GC job (services.periodic_jobs) advances it: mark the experiments' checkpoints for the
checkpoint GC path, delete their files outside any transaction, then drop each experiment whose
files are all gone, then the project, then the workspace. A failure (a checkpoint that could not
be deleted, or a blocker that appeared meanwhile) leaves DELETE_FAILED with the reason in
`errorMessage`; deleting again retries. Every step is stored, so a restart resumes it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import (
    Allocation,
    Checkpoint,
    Command,
    Experiment,
    ExperimentContext,
    Job,
    Metric,
    ModelVersion,
    Project,
    RegisteredModel,
    StateChange,
    Task,
    TaskLog,
    Template,
    Trial,
    User,
    Workspace,
)
from controlplane.db.session import transaction
from controlplane.domain.command_states import CommandState
from controlplane.domain.deletion import (
    DeleteState,
    ExperimentFacts,
    blockers,
    plan_project_deletion,
)
from controlplane.domain.errors import Conflict
from controlplane.domain.states import RunState
from controlplane.services.checkpoint_files import CheckpointDeleter, delete_checkpoint_files
from controlplane.services.checkpoint_gc import (
    BATCH,
    LIVE_STATES,
    process_pending_deletions,
    request_deletion,
)
from controlplane.services.workspaces import (
    can_change_project,
    can_change_workspace,
    get_workspace,
    mutable,
)

log = logging.getLogger("controlplane.deletions")


def is_deleting(row: Workspace | Project) -> bool:
    return row.state != DeleteState.UNSPECIFIED


async def experiment_facts(
    session: AsyncSession, experiment_ids: list[int]
) -> list[ExperimentFacts]:
    """What the deletion plan needs to know of each experiment."""
    if not experiment_ids:
        return []
    states = dict(
        (
            await session.execute(
                select(Experiment.id, Experiment.state)
                .where(Experiment.id.in_(experiment_ids))
                .order_by(Experiment.id)
            )
        ).all()
    )
    registered: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for exp_id, model, version in await session.execute(
        select(Trial.experiment_id, RegisteredModel.name, ModelVersion.version)
        .join(Checkpoint, Checkpoint.uuid == ModelVersion.checkpoint_uuid)
        .join(Trial, Trial.id == Checkpoint.trial_id)
        .join(RegisteredModel, RegisteredModel.id == ModelVersion.model_id)
        .where(Trial.experiment_id.in_(experiment_ids))
        .order_by(RegisteredModel.name, ModelVersion.version)
    ):
        registered[exp_id].append((model, version))
    live: dict[int, list[str]] = defaultdict(list)
    protected: dict[int, list[str]] = defaultdict(list)
    marked: dict[int, set[str]] = defaultdict(set)
    failed: dict[int, dict[str, str]] = defaultdict(dict)
    for exp_id, uuid, is_protected, requested, globs, error in await session.execute(
        select(
            Trial.experiment_id,
            Checkpoint.uuid,
            Checkpoint.protected,
            Checkpoint.delete_requested_at,
            Checkpoint.delete_globs,
            Checkpoint.delete_error,
        )
        .join(Trial, Trial.id == Checkpoint.trial_id)
        .where(Trial.experiment_id.in_(experiment_ids), Checkpoint.state.in_(LIVE_STATES))
        .order_by(Checkpoint.uuid)
    ):
        live[exp_id].append(uuid)
        if is_protected:
            protected[exp_id].append(uuid)
        # A glob mark removes only some files: the whole checkpoint still has to be marked.
        if requested is not None and globs is None:
            marked[exp_id].add(uuid)
        if error:
            failed[exp_id][uuid] = error
    return [
        ExperimentFacts(
            id=exp_id,
            state=state,
            terminal=RunState(state).is_terminal,
            registered=tuple(registered[exp_id]),
            protected=tuple(protected[exp_id]),
            live=tuple(live[exp_id]),
            marked=frozenset(marked[exp_id]),
            failed=dict(failed[exp_id]),
        )
        for exp_id, state in states.items()
    ]


async def _experiment_ids(session: AsyncSession, project_ids: Iterable[int]) -> list[int]:
    return list(
        await session.scalars(
            select(Experiment.id)
            .where(Experiment.project_id.in_(list(project_ids)))
            .order_by(Experiment.id)
        )
    )


async def _running_work(session: AsyncSession, workspace_id: int) -> list[str]:
    rows = await session.execute(
        select(Command.task_id, Task.task_type)
        .join(Task, Task.task_id == Command.task_id)
        .where(
            Command.workspace_id == workspace_id,
            Command.state != CommandState.TERMINATED.value,
        )
        .order_by(Task.start_time)
    )
    return [
        f"{kind.lower()} {task_id} is running: kill it first (det {_noun(kind)} kill {task_id})"
        for task_id, kind in rows
    ]


async def _models_in(session: AsyncSession, workspace_id: int) -> int:
    return (
        await session.scalar(
            select(func.count())
            .select_from(RegisteredModel)
            .where(RegisteredModel.workspace_id == workspace_id)
        )
        or 0
    )


def _noun(task_type: str) -> str:
    return {"COMMAND": "command", "TENSORBOARD": "tensorboard"}.get(task_type, task_type.lower())


async def _retry_now(session: AsyncSession, experiment_ids: list[int]) -> None:
    """A new delete request retries failed checkpoint deletions at once."""
    if not experiment_ids:
        return
    trials = select(Trial.id).where(Trial.experiment_id.in_(experiment_ids))
    await session.execute(
        update(Checkpoint)
        .where(Checkpoint.trial_id.in_(trials), Checkpoint.delete_error.is_not(None))
        .values(delete_error=None, delete_retry_at=None)
    )


def _refuse(kind: str, name: str, reasons: list[str]) -> None:
    if reasons:
        raise Conflict(f"{kind} '{name}' cannot be deleted: " + "; ".join(reasons))


async def begin_project_deletion(session: AsyncSession, user: User, project: Project) -> bool:
    """Delete the project now if it is empty (True), else start deleting it (False)."""
    ws = await get_workspace(session, project.workspace_id)
    can_change_project(user, project, ws)
    mutable("project", project)
    ids = await _experiment_ids(session, [project.id])
    _refuse("project", project.name, blockers(await experiment_facts(session, ids)))
    if not ids:
        await session.execute(delete(Project).where(Project.id == project.id))
        return True
    project.state, project.error_message = DeleteState.DELETING.value, None
    await _retry_now(session, ids)
    await session.flush()
    return False


async def begin_workspace_deletion(session: AsyncSession, user: User, ws: Workspace) -> bool:
    """Delete the workspace now if it holds no experiments (True), else start (False)."""
    can_change_workspace(user, ws)
    mutable("workspace", ws)
    models = await _models_in(session, ws.id)
    if models:
        raise Conflict(
            f"workspace '{ws.name}' still holds {models} model(s): move them to another "
            "workspace (det model move) or delete them first"
        )
    projects = list(await session.scalars(select(Project).where(Project.workspace_id == ws.id)))
    ids = await _experiment_ids(session, [p.id for p in projects])
    reasons = await _running_work(session, ws.id)
    _refuse("workspace", ws.name, reasons + blockers(await experiment_facts(session, ids)))
    if not ids:
        await _drop_workspace(session, ws)
        return True
    ws.state, ws.error_message = DeleteState.DELETING.value, None
    for p in projects:
        p.state, p.error_message = DeleteState.DELETING.value, None
    await _retry_now(session, ids)
    await session.flush()
    return False


async def _drop_tasks(session: AsyncSession, task_ids: list[str]) -> None:
    if not task_ids:
        return
    allocations = select(Allocation.allocation_id).where(Allocation.task_id.in_(task_ids))
    await session.execute(
        delete(StateChange).where(
            StateChange.entity == "allocation", StateChange.entity_id.in_(allocations)
        )
    )
    await session.execute(delete(TaskLog).where(TaskLog.task_id.in_(task_ids)))
    await session.execute(delete(Allocation).where(Allocation.task_id.in_(task_ids)))
    await session.execute(delete(Task).where(Task.task_id.in_(task_ids)))


async def drop_experiment(session: AsyncSession, experiment_id: int) -> None:
    """Remove an ended experiment whose checkpoint files are gone, with everything it owns."""
    exp = await session.get(Experiment, experiment_id)
    if exp is None:
        return
    trials = (
        await session.execute(
            select(Trial.id, Trial.task_id).where(Trial.experiment_id == experiment_id)
        )
    ).all()
    trial_ids = [t for t, _ in trials]
    task_ids = [task for _, task in trials]
    task_ids += [
        t
        for t in await session.scalars(select(Task.task_id).where(Task.job_id == exp.job_id))
        if t not in task_ids
    ]
    await session.execute(
        delete(StateChange).where(
            or_(
                (StateChange.entity == "experiment") & (StateChange.entity_id == str(exp.id)),
                (StateChange.entity == "trial")
                & StateChange.entity_id.in_([str(t) for t in trial_ids]),
            )
        )
    )
    # Forks keep working without their parent (Determined's parent_id is a plain reference).
    await session.execute(
        update(Experiment).where(Experiment.parent_id == exp.id).values(parent_id=None)
    )
    if trial_ids:
        await session.execute(delete(Checkpoint).where(Checkpoint.trial_id.in_(trial_ids)))
        await session.execute(delete(Metric).where(Metric.trial_id.in_(trial_ids)))
        await session.execute(delete(Trial).where(Trial.id.in_(trial_ids)))
    await _drop_tasks(session, task_ids)
    await session.execute(
        delete(ExperimentContext).where(ExperimentContext.experiment_id == exp.id)
    )
    await session.execute(delete(Job).where(Job.job_id == exp.job_id))
    # Statements, not session.delete: a pass racing this one may have removed the row already.
    await session.execute(delete(Experiment).where(Experiment.id == exp.id))


async def _drop_workspace(session: AsyncSession, ws: Workspace) -> None:
    """Remove a workspace whose projects hold no experiments: its (ended) commands, notebooks,
    shells and TensorBoards, templates and projects go with it."""
    commands = list(
        await session.scalars(select(Command.task_id).where(Command.workspace_id == ws.id))
    )
    if commands:
        jobs = select(Task.job_id).where(Task.task_id.in_(commands))
        await session.execute(delete(Job).where(Job.job_id.in_(jobs)))
        await session.execute(
            delete(StateChange).where(
                StateChange.entity == "command", StateChange.entity_id.in_(commands)
            )
        )
        await session.execute(delete(Command).where(Command.task_id.in_(commands)))
        await _drop_tasks(session, commands)
    await session.execute(delete(Template).where(Template.workspace_id == ws.id))
    await session.execute(delete(Project).where(Project.workspace_id == ws.id))
    await session.execute(delete(Workspace).where(Workspace.id == ws.id))


async def _fail(session: AsyncSession, project: Project, reason: str) -> None:
    project.state, project.error_message = DeleteState.DELETE_FAILED.value, reason
    ws = await session.get(Workspace, project.workspace_id)
    if ws is not None and ws.state == DeleteState.DELETING:
        ws.state = DeleteState.DELETE_FAILED.value
        ws.error_message = f"project '{project.name}': {reason}"
    log.warning("deleting project %s failed: %s", project.id, reason)


async def _advance_project(
    factory: async_sessionmaker[AsyncSession],
    project_id: int,
    *,
    now: datetime,
    default_storage: dict[str, Any],
    deleter: CheckpointDeleter,
) -> None:
    # 1. plan and mark the checkpoints that still have files
    async with transaction(factory) as session:
        project = await session.get(Project, project_id)
        if project is None or project.state != DeleteState.DELETING:
            return
        facts = await experiment_facts(session, await _experiment_ids(session, [project_id]))
        plan = plan_project_deletion(facts)
        if plan.failure:
            await _fail(session, project, plan.failure)
            return
        await request_deletion(session, plan.mark, now)
        pending = [e.id for e in facts if e.live]
    # 2. delete the files, outside any transaction (the checkpoint GC path)
    for experiment_id in pending:
        while True:
            done = await process_pending_deletions(
                factory,
                now=now,
                default_storage=default_storage,
                deleter=deleter,
                experiment_id=experiment_id,
            )
            if len(done.deleted) + len(done.failed) + len(done.trimmed) < BATCH:
                break
    # 3. drop what has no files left, then the project once it is empty
    async with transaction(factory) as session:
        project = await session.get(Project, project_id)
        if project is None or project.state != DeleteState.DELETING:
            return
        facts = await experiment_facts(session, await _experiment_ids(session, [project_id]))
        plan = plan_project_deletion(facts)
        if plan.failure:
            await _fail(session, project, plan.failure)
            return
        for experiment_id in plan.drop_experiments:
            await drop_experiment(session, experiment_id)
        if plan.done:
            await session.execute(delete(Project).where(Project.id == project_id))
            log.info("project %s deleted", project_id)


async def advance_deletions(
    factory: async_sessionmaker[AsyncSession],
    *,
    now: datetime,
    default_storage: dict[str, Any],
    deleter: CheckpointDeleter = delete_checkpoint_files,
) -> None:
    """One pass over every deletion in progress (run by the periodic GC job)."""
    async with transaction(factory) as session:
        project_ids = list(
            await session.scalars(
                select(Project.id)
                .where(Project.state == DeleteState.DELETING.value)
                .order_by(Project.id)
            )
        )
    for project_id in project_ids:
        await _advance_project(
            factory, project_id, now=now, default_storage=default_storage, deleter=deleter
        )
    async with transaction(factory) as session:
        for ws in await session.scalars(
            select(Workspace).where(Workspace.state == DeleteState.DELETING.value)
        ):
            await _finish_workspace(session, ws)


async def _finish_workspace(session: AsyncSession, ws: Workspace) -> None:
    left = await session.scalar(
        select(func.count()).select_from(Project).where(Project.workspace_id == ws.id)
    )
    if left:
        return
    # What was refused up front may have appeared since (a model moved in): fail, keep it.
    reasons = await _running_work(session, ws.id)
    if await _models_in(session, ws.id):
        reasons.append("it holds models: move them to another workspace or delete them")
    if reasons:
        ws.state, ws.error_message = DeleteState.DELETE_FAILED.value, "; ".join(reasons)
        return
    await _drop_workspace(session, ws)
    log.info("workspace %s deleted", ws.id)
