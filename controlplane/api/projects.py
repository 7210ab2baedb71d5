"""Projects: `/api/v1/projects…`, and moving experiments and projects between them."""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.reports import Empty
from controlplane.api.schemas.workspaces import (
    DeleteResponse,
    MoveExperimentRequest,
    MoveProjectRequest,
    PatchProjectRequest,
    ProjectResponse,
)
from controlplane.api.workspaces import project_out
from controlplane.domain.errors import InvalidArgument
from controlplane.services import deletions
from controlplane.services import workspaces as service
from controlplane.services.experiments import get_experiment
from controlplane.services.workspaces import ProjectFields

_PROJECT = "/api/v1/projects/{project_id:int}"


@get(_PROJECT)
async def get_project(db: Db, principal: Caller, project_id: Id32) -> ProjectResponse:
    return ProjectResponse(project=await project_out(db, await service.get_project(db, project_id)))


@patch(_PROJECT)
async def patch_project(
    data: JSONBody[PatchProjectRequest], db: Db, principal: Caller, project_id: Id32
) -> ProjectResponse:
    project = await service.get_project(db, project_id)
    fields = ProjectFields(name=data.name, description=data.description, key=data.key)
    await service.patch_project(db, principal.user, project, fields)
    return ProjectResponse(project=await project_out(db, project))


@delete(_PROJECT, status_code=200)
async def delete_project(db: Db, principal: Caller, ctx: Ctx, project_id: Id32) -> DeleteResponse:
    """Determined's DeleteProject: an empty project goes at once (`completed`); else it is
    DELETING until its experiments (and their checkpoints) are gone."""
    project = await service.get_project(db, project_id)
    completed = await deletions.begin_project_deletion(db, principal.user, project)
    await db.commit()
    if not completed and ctx.periodic is not None:
        ctx.periodic.wake_gc()
    return DeleteResponse(completed=completed)


def _archiver(path: str, archived: bool):  # type: ignore[no-untyped-def]
    @post(path, status_code=200)
    async def handler(db: Db, principal: Caller, project_id: Id32) -> Empty:
        project = await service.get_project(db, project_id)
        await service.set_project_archived(db, principal.user, project, archived)
        return Empty()

    return handler


archive_project = _archiver(_PROJECT + "/archive", True)
unarchive_project = _archiver(_PROJECT + "/unarchive", False)


@post(_PROJECT + "/move", status_code=200)
async def move_project(
    data: JSONBody[MoveProjectRequest], db: Db, principal: Caller, project_id: Id32
) -> Empty:
    project = await service.get_project(db, project_id)
    destination = await service.get_workspace(db, data.destination_workspace_id)
    await service.move_project(db, principal.user, project, destination)
    return Empty()


@post("/api/v1/experiments/{experiment_id:int}/move", status_code=200)
async def move_experiment(
    data: JSONBody[MoveExperimentRequest], db: Db, principal: Caller, experiment_id: Id32
) -> Empty:
    if data.experiment_id not in (None, 0, experiment_id):
        raise InvalidArgument(
            f"body experimentId {data.experiment_id} does not match the path's {experiment_id}"
        )
    exp = await get_experiment(db, experiment_id)
    destination = await service.get_project(db, data.destination_project_id)
    await service.move_experiment(db, principal.user, exp, destination)
    return Empty()


ROUTES = [
    get_project,
    patch_project,
    delete_project,
    archive_project,
    unarchive_project,
    move_project,
    move_experiment,
]
