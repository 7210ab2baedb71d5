"""The model registry on the wire (Determined's v1Model, v1ModelVersion and their requests)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import INT32_MAX, Pagination, Wire
from controlplane.api.schemas.reports import CheckpointOut


class ModelOut(Wire):
    id: int
    name: str
    description: str = ""
    notes: str = ""
    labels: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    archived: bool
    creation_time: datetime
    last_updated_time: datetime
    num_versions: int
    user_id: int
    username: str
    workspace_id: int


class ModelVersionOut(Wire):
    id: int
    version: int
    model: ModelOut
    checkpoint: CheckpointOut
    name: str = ""
    comment: str = ""
    notes: str = ""
    labels: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    creation_time: datetime
    last_updated_time: datetime
    user_id: int
    username: str


class ModelResponse(Wire):
    model: ModelOut


class ModelsResponse(Wire):
    models: list[ModelOut]
    pagination: Pagination


class ModelVersionResponse(Wire):
    model_version: ModelVersionOut


class ModelVersionsResponse(Wire):
    model: ModelOut
    model_versions: list[ModelVersionOut]
    pagination: Pagination


WorkspaceRef = Field(None, ge=0, le=INT32_MAX)


class PostModelRequest(Wire):
    name: str
    description: str | None = None
    notes: str | None = None
    labels: list[str] | None = None
    metadata: dict[str, Any] | None = None
    workspace_id: int | None = WorkspaceRef
    workspace_name: str | None = None


class PatchModelRequest(Wire):
    name: str | None = None
    description: str | None = None
    notes: str | None = None
    labels: list[str] | None = None
    metadata: dict[str, Any] | None = None
    workspace_id: int | None = WorkspaceRef
    workspace_name: str | None = None


class MoveModelRequest(Wire):
    destination_workspace_id: int = Field(ge=1, le=INT32_MAX)
    model_name: str | None = None


class PostModelVersionRequest(Wire):
    checkpoint_uuid: str = Field(max_length=64)
    model_name: str | None = None
    name: str | None = None
    comment: str | None = None
    notes: str | None = None
    labels: list[str] | None = None
    metadata: dict[str, Any] | None = None


class PatchModelVersionRequest(Wire):
    name: str | None = None
    comment: str | None = None
    notes: str | None = None
    labels: list[str] | None = None
    metadata: dict[str, Any] | None = None


class ModelLabelsResponse(Wire):
    labels: list[str]
