"""An experiment's context files and validation history, as Determined serves them to its
web UI and client: GET …/file_tree (GetModelDefTree), POST …/file (GetModelDefFile, the
content base64-encoded as protobuf bytes are) and GET …/validation-history."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from litestar import get, post
from litestar.params import JSONBody
from pydantic import Field

from controlplane.api.deps import Caller, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.common import Wire
from controlplane.domain import limits
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.model_def_tree import FileNode, build_tree, find_file
from controlplane.services import experiment_reads


class FileNodeOut(Wire):
    path: str
    name: str
    modified_time: str
    content_length: int
    is_dir: bool
    content_type: str
    files: list[FileNodeOut] = []


class ModelDefTreeResponse(Wire):
    files: list[FileNodeOut]


class ModelDefFileRequest(Wire):
    experiment_id: int | None = None
    path: str = Field("", max_length=limits.PATH_CHARS)


class ModelDefFileResponse(Wire):
    file: str


class ValidationHistoryEntry(Wire):
    trial_id: int
    end_time: str
    searcher_metric: float


class ValidationHistoryResponse(Wire):
    validation_history: list[ValidationHistoryEntry]


def _stamp(value: datetime) -> str:
    if value.tzinfo is None:  # SQLite hands back naive UTC
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _node(n: FileNode) -> FileNodeOut:
    return FileNodeOut(
        path=n.path,
        name=n.name,
        modified_time=_stamp(n.modified_time),
        content_length=n.content_length,
        is_dir=n.is_dir,
        content_type=n.content_type,
        files=[_node(c) for c in n.files],
    )


@get("/api/v1/experiments/{experiment_id:int}/file_tree")
async def model_def_tree(db: Db, principal: Caller, experiment_id: Id32) -> ModelDefTreeResponse:
    members = await experiment_reads.context_members(db, experiment_id)
    return ModelDefTreeResponse(files=[_node(n) for n in build_tree(members)])


@post("/api/v1/experiments/{experiment_id:int}/file", status_code=200)
async def model_def_file(
    data: JSONBody[ModelDefFileRequest], db: Db, principal: Caller, experiment_id: Id32
) -> ModelDefFileResponse:
    if data.experiment_id not in (None, 0, experiment_id):
        raise InvalidArgument(
            f"experimentId {data.experiment_id} in the body differs from {experiment_id}"
            " in the path"
        )
    path = experiment_reads.check_path(data.path)
    found = find_file(await experiment_reads.context_members(db, experiment_id), path)
    if found is None:
        raise NotFound(f"experiment {experiment_id} has no file {path[:200]!r}")
    return ModelDefFileResponse(file=base64.b64encode(found.content).decode())


@get("/api/v1/experiments/{experiment_id:int}/validation-history")
async def validation_history(
    db: Db, principal: Caller, experiment_id: Id32
) -> ValidationHistoryResponse:
    kept = await experiment_reads.validation_history(db, experiment_id)
    return ValidationHistoryResponse(
        validation_history=[
            ValidationHistoryEntry(
                trial_id=v.trial_id, end_time=_stamp(v.end_time), searcher_metric=v.value or 0.0
            )
            for v in kept
        ]
    )


ROUTES = [model_def_tree, model_def_file, validation_history]
