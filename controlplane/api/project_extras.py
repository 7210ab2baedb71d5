"""Projects by key, project notes, and the values of a run-metadata key across a project's
runs (Determined's GetProjectByKey, AddProjectNote, PutProjectNotes, GetMetadataValues)."""

from __future__ import annotations

from typing import Annotated

from litestar import get, post, put
from litestar.params import JSONBody, Parameter

from controlplane.api.deps import Caller, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.projects import (
    MetadataValuesResponse,
    Note,
    NotesResponse,
    PutNotesRequest,
)
from controlplane.api.schemas.workspaces import ProjectResponse
from controlplane.api.workspaces import project_out
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.rbac import Permission as P
from controlplane.services import project_notes
from controlplane.services import workspaces as service

_PROJECT = "/api/v1/projects/{project_id:int}"


@get("/api/v1/projects/key/{key:str}")
async def project_by_key(
    db: Db, principal: Caller, key: Annotated[str, Parameter(max_length=16)]
) -> ProjectResponse:
    project = await project_notes.by_key(db, key)
    visible = principal.workspaces(P.VIEW_PROJECT)
    if visible is not None and project.workspace_id not in visible:  # RBAC: as if absent
        raise NotFound(f"project with key '{key}' not found")
    return ProjectResponse(project=await project_out(db, project))


@post(_PROJECT + "/notes", status_code=200)
async def add_note(
    data: JSONBody[Note], db: Db, principal: Caller, project_id: Id32
) -> NotesResponse:
    notes = await project_notes.add(db, principal.user, project_id, data.model_dump())
    return NotesResponse(notes=[Note(**n) for n in notes])


@put(_PROJECT + "/notes")
async def put_notes(
    data: JSONBody[PutNotesRequest], db: Db, principal: Caller, project_id: Id32
) -> NotesResponse:
    if data.project_id not in (None, 0, project_id):
        raise InvalidArgument(f"body projectId {data.project_id} does not match the path")
    notes = await project_notes.replace(
        db, principal.user, project_id, [n.model_dump() for n in data.notes]
    )
    return NotesResponse(notes=[Note(**n) for n in notes])


@get(_PROJECT + "/metadata/{key:str}")
async def metadata_values(
    db: Db, principal: Caller, project_id: Id32, key: Annotated[str, Parameter(max_length=1024)]
) -> MetadataValuesResponse:
    await service.get_project(db, project_id)
    return MetadataValuesResponse(values=await project_notes.metadata_values(db, project_id, key))


ROUTES = [project_by_key, add_note, put_notes, metadata_values]
