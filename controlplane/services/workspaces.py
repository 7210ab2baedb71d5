"""Workspaces and projects: create, rename, archive; experiments placed in projects.

Everyone reads every workspace and project. A workspace's owner or an admin changes it; a
project's owner, its workspace's owner or an admin changes the project. The default workspace
and project (`Uncategorized`) are immutable. Nothing is created in, moved into or out of an
archived workspace or project, nor one being deleted (services.deletions deletes them with their
contents).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.schemas.expconf import CheckpointStorageConfig
from controlplane.api.schemas.expconf.merge import merge_checkpoint_storage
from controlplane.db.models import (
    Experiment,
    Job,
    Project,
    User,
    Workspace,
)
from controlplane.domain import limits
from controlplane.domain import registry_names as names
from controlplane.domain.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from controlplane.domain.states import TERMINAL, RunState
from controlplane.services import workspace_pools
from controlplane.services.reschedule import mark_reschedule

_STORAGE = TypeAdapter(CheckpointStorageConfig)


@dataclass(frozen=True)
class WorkspaceFields:
    """What a create or a patch sets; None leaves a field as it is. An empty storage config
    (`{}`) removes the workspace's own, as in Determined."""

    name: str | None = None
    checkpoint_storage_config: dict[str, Any] | None = None
    default_compute_pool: str | None = None
    default_aux_pool: str | None = None


@dataclass(frozen=True)
class Place:
    """Where an experiment lives, as its wire form shows it."""

    workspace_id: int
    workspace_name: str
    project_name: str
    project_owner_id: int


@dataclass(frozen=True)
class ProjectFields:
    name: str | None = None
    description: str | None = None
    key: str | None = None


def check_storage(config: dict[str, Any]) -> dict[str, Any] | None:
    """The workspace's checkpoint storage as stored: None for `{}`, else a valid block."""
    if not config:
        return None
    limits.check_json_size("checkpointStorageConfig", config, limits.CONFIG_BYTES)
    try:
        _STORAGE.validate_python(config)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'checkpoint_storage'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
        raise InvalidArgument(f"invalid checkpointStorageConfig: {problems}") from None
    return config


def _check_pool(field: str, value: str | None) -> None:
    if value is not None:
        names.check_text(field, value, limits.SHORT_NAME_CHARS)


def can_change_workspace(user: User, ws: Workspace) -> None:
    if not (user.admin or user.id == ws.user_id):
        raise PermissionDenied(f"only the owner of workspace '{ws.name}' or an admin may change it")


def can_change_project(user: User, project: Project, ws: Workspace) -> None:
    if not (user.admin or user.id in (project.user_id, ws.user_id)):
        raise PermissionDenied(
            f"only the owner of project '{project.name}', of its workspace, or an admin may "
            "change it"
        )


def mutable(kind: str, row: Workspace | Project) -> None:
    if row.immutable:
        raise InvalidArgument(f"the {kind} '{row.name}' is the default one and cannot be changed")


async def get_workspace(session: AsyncSession, workspace_id: int) -> Workspace:
    ws = await session.get(Workspace, workspace_id)
    if ws is None:
        raise NotFound(f"workspace {workspace_id} not found")
    return ws


async def get_project(session: AsyncSession, project_id: int) -> Project:
    project = await session.get(Project, project_id)
    if project is None:
        raise NotFound(f"project {project_id} not found")
    return project


async def _workspace_name_free(session: AsyncSession, name: str) -> None:
    if await session.scalar(select(Workspace.id).where(Workspace.name == name)):
        raise Conflict(f"a workspace named '{name}' already exists")


def _apply_workspace(ws: Workspace, f: WorkspaceFields) -> None:
    if f.checkpoint_storage_config is not None:
        ws.checkpoint_storage_config = check_storage(f.checkpoint_storage_config)
    _check_pool("defaultComputePool", f.default_compute_pool)
    _check_pool("defaultAuxPool", f.default_aux_pool)
    if f.default_compute_pool is not None:
        ws.default_compute_pool = f.default_compute_pool or None
    if f.default_aux_pool is not None:
        ws.default_aux_pool = f.default_aux_pool or None


async def create_workspace(
    session: AsyncSession, user: User, f: WorkspaceFields, now: datetime
) -> Workspace:
    name = names.check_name("workspace", f.name or "")
    await _workspace_name_free(session, name)
    ws = Workspace(name=name, user_id=user.id, immutable=False, archived=False, created_at=now)
    _apply_workspace(ws, f)
    session.add(ws)
    await session.flush()
    return ws


async def patch_workspace(
    session: AsyncSession, user: User, ws: Workspace, f: WorkspaceFields
) -> Workspace:
    can_change_workspace(user, ws)
    if f.name is not None and f.name != ws.name:
        mutable("workspace", ws)
        names.check_name("workspace", f.name)
        await _workspace_name_free(session, f.name)
        ws.name = f.name
    _apply_workspace(ws, f)
    await session.flush()
    return ws


def set_workspace_archived(user: User, ws: Workspace, archived: bool) -> None:
    can_change_workspace(user, ws)
    mutable("workspace", ws)
    if ws.archived == archived:
        state = "archived" if archived else "not archived"
        raise InvalidArgument(f"workspace '{ws.name}' is already {state}")
    ws.archived = archived


async def _project_name_free(session: AsyncSession, ws: Workspace, name: str) -> None:
    taken = await session.scalar(
        select(Project.id).where(Project.workspace_id == ws.id, Project.name == name)
    )
    if taken:
        raise Conflict(f"workspace '{ws.name}' already has a project named '{name}'")


async def _key_for(session: AsyncSession, name: str, key: str | None) -> str:
    taken = set(await session.scalars(select(Project.key)))
    if key is None or key == "":
        return names.project_key(name, taken)
    key = names.check_project_key(key)
    if key in taken:
        raise Conflict(f"a project with key '{key}' already exists")
    return key


def _open_for_new(ws: Workspace) -> None:
    if ws.archived:
        raise InvalidArgument(f"workspace '{ws.name}' is archived: unarchive it first")
    not_deleting("workspace", ws)


def not_deleting(kind: str, row: Workspace | Project) -> None:
    """Nothing goes into, or out of, a workspace or project while it is being deleted (one
    whose deletion failed is open again, so that what blocked it can be moved out)."""
    if row.state == "DELETING":
        raise Conflict(
            f"the {kind} '{row.name}' is being deleted: nothing can be added to or moved out of it"
        )


async def create_project(
    session: AsyncSession, user: User, ws: Workspace, f: ProjectFields, now: datetime
) -> Project:
    name = names.check_name("project", f.name or "")
    _open_for_new(ws)
    description = names.check_text("the description", f.description or "", limits.DESCRIPTION_CHARS)
    await _project_name_free(session, ws, name)
    project = Project(
        workspace_id=ws.id,
        name=name,
        key=await _key_for(session, name, f.key),
        description=description,
        user_id=user.id,
        immutable=False,
        archived=False,
        created_at=now,
    )
    session.add(project)
    await session.flush()
    return project


async def patch_project(
    session: AsyncSession, user: User, project: Project, f: ProjectFields
) -> Project:
    ws = await get_workspace(session, project.workspace_id)
    can_change_project(user, project, ws)
    if f.name is not None and f.name != project.name:
        mutable("project", project)
        names.check_name("project", f.name)
        await _project_name_free(session, ws, f.name)
        project.name = f.name
    if f.description is not None:
        project.description = names.check_text(
            "the description", f.description, limits.DESCRIPTION_CHARS
        )
    if f.key is not None and f.key.upper() != project.key:
        project.key = await _key_for(session, project.name, f.key)
    await session.flush()
    return project


async def set_project_archived(
    session: AsyncSession, user: User, project: Project, archived: bool
) -> None:
    ws = await get_workspace(session, project.workspace_id)
    can_change_project(user, project, ws)
    mutable("project", project)
    if not archived and ws.archived:
        raise InvalidArgument(f"workspace '{ws.name}' is archived: unarchive it first")
    if project.archived == archived:
        state = "archived" if archived else "not archived"
        raise InvalidArgument(f"project '{project.name}' is already {state}")
    project.archived = archived


async def project_for_new_experiment(
    session: AsyncSession, project_id: int | None, config: dict[str, Any]
) -> tuple[Project, Workspace]:
    """Where a new experiment goes: the request's project, else the config's `workspace` and
    `project` names (both, as Determined), else the default project. Refused when archived."""
    ws_name, project_name = config.get("workspace") or "", config.get("project") or ""
    if project_id:
        project = await get_project(session, project_id)
    elif ws_name or project_name:
        if not (isinstance(ws_name, str) and isinstance(project_name, str)):
            raise InvalidArgument("the config's workspace and project must be names")
        if not (ws_name and project_name):
            raise InvalidArgument(
                "the config names a workspace or a project: give both `workspace` and `project`"
            )
        found = await session.scalar(
            select(Project)
            .join(Workspace, Workspace.id == Project.workspace_id)
            .where(Workspace.name == ws_name, Project.name == project_name)
        )
        if found is None:
            raise NotFound(f"project '{project_name}' not found in workspace '{ws_name}'")
        project = found
    else:
        project = await get_project(session, 1)
    ws = await get_workspace(session, project.workspace_id)
    if project.archived or ws.archived:
        raise InvalidArgument(
            f"project '{project.name}' (workspace '{ws.name}') is archived: "
            "experiments cannot be created in it"
        )
    not_deleting("project", project)
    return project, ws


def default_pool(ws: Workspace, slots: object) -> str | None:
    """The workspace's default pool for work of ``slots`` slots: aux for zero-slot work,
    compute otherwise (as the cluster's defaults); None when it sets none."""
    return (ws.default_aux_pool if slots == 0 else ws.default_compute_pool) or None


def with_default_pool(ws: Workspace, config: dict[str, Any]) -> dict[str, Any]:
    """The config with the workspace's default compute (or, for zero slots per trial, aux) pool
    where it names no pool."""
    resources = config.get("resources")
    if resources is not None and not isinstance(resources, dict):
        return config  # validation reports it
    resources = resources or {}
    pool = default_pool(ws, resources.get("slots_per_trial", 1))
    if not pool or resources.get("resource_pool"):
        return config
    return {**config, "resources": {**resources, "resource_pool": pool}}


def storage_under_experiments(ws: Workspace, master: dict[str, Any] | None) -> Any:
    """The checkpoint storage an experiment's own block is merged over: the workspace's merged
    over the master's, or the master's alone."""
    if ws.checkpoint_storage_config:
        return merge_checkpoint_storage(ws.checkpoint_storage_config, master)
    return master


async def move_experiment(
    session: AsyncSession, user: User, exp: Experiment, destination: Project
) -> None:
    # The same rule as every change to an experiment (services.experiments.can_modify).
    if not (user.admin or user.id == exp.owner_id):
        raise PermissionDenied(f"only the owner of experiment {exp.id} or an admin may move it")
    ws = await get_workspace(session, destination.workspace_id)
    if destination.archived or ws.archived:
        raise InvalidArgument(f"project '{destination.name}' is archived")
    not_deleting("project", destination)
    not_deleting("project", await get_project(session, exp.project_id))
    if ws.id != (await get_project(session, exp.project_id)).workspace_id:
        if not RunState(exp.state).is_terminal:
            await workspace_pools.check_available(session, exp.resource_pool, ws)
        # The job's workspace is what its slot quota is counted against.
        await session.execute(
            update(Job).where(Job.job_id == exp.job_id).values(workspace_id=ws.id)
        )
        mark_reschedule(session, exp.resource_pool)
    exp.project_id = destination.id


async def move_project(
    session: AsyncSession, user: User, project: Project, destination: Workspace
) -> None:
    source = await get_workspace(session, project.workspace_id)
    can_change_project(user, project, source)
    mutable("project", project)
    not_deleting("project", project)
    _open_for_new(destination)
    if destination.id != source.id:
        await _project_name_free(session, destination, project.name)
        # Experiments that have not ended must be allowed in the destination's pools; their
        # jobs' slots count against the destination's quotas from the next pass.
        live_pools = sorted(
            set(
                await session.scalars(
                    select(Experiment.resource_pool).where(
                        Experiment.project_id == project.id,
                        Experiment.state.not_in([s.value for s in TERMINAL]),
                    )
                )
            )
        )
        for pool in live_pools:
            await workspace_pools.check_available(session, pool, destination)
        jobs = select(Experiment.job_id).where(Experiment.project_id == project.id)
        await session.execute(
            update(Job).where(Job.job_id.in_(jobs)).values(workspace_id=destination.id)
        )
        for pool in live_pools:
            mark_reschedule(session, pool)
        project.workspace_id = destination.id
    await session.flush()


async def places(session: AsyncSession, project_ids: set[int]) -> dict[int, Place]:
    """Each project's workspace and names, for showing experiments."""
    if not project_ids:
        return {}
    rows = await session.execute(
        select(Project.id, Workspace.id, Workspace.name, Project.name, Project.user_id)
        .join(Workspace, Workspace.id == Project.workspace_id)
        .where(Project.id.in_(project_ids))
    )
    return {pid: Place(wid, wname, pname, owner) for pid, wid, wname, pname, owner in rows.all()}
