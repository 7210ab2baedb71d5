"""Workspaces and projects on the wire (Determined's v1Workspace, v1Project and requests)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import INT32_MAX, Pagination, Wire
from controlplane.api.schemas.workspace_pools import SlotQuotas


class WorkspaceOut(Wire):
    id: int
    name: str
    archived: bool
    username: str
    user_id: int
    immutable: bool
    num_projects: int
    pinned: bool = False
    pinned_at: datetime | None = None
    num_experiments: int
    state: str = "WORKSPACE_STATE_UNSPECIFIED"
    error_message: str = ""
    checkpoint_storage_config: dict[str, Any] | None = None
    default_compute_pool: str | None = None
    default_aux_pool: str | None = None
    # Resolute addition: the most slots the workspace's jobs hold at once, per pool.
    slot_quotas: dict[str, int] = Field(default_factory=dict)


class WorkspacesResponse(Wire):
    workspaces: list[WorkspaceOut]
    pagination: Pagination


class WorkspaceResponse(Wire):
    workspace: WorkspaceOut


class PostWorkspaceResponse(WorkspaceResponse):
    # Kubernetes namespaces: none here, but the 0.38.1 client iterates the map after a create.
    namespace_bindings: dict[str, Any] = Field(default_factory=dict)


class ProjectOut(Wire):
    id: int
    name: str
    key: str
    workspace_id: int
    workspace_name: str = ""
    description: str = ""
    archived: bool
    immutable: bool
    num_experiments: int
    num_active_experiments: int
    num_runs: int = 0
    notes: list[dict[str, str]] = []
    username: str
    user_id: int
    state: str = "WORKSPACE_STATE_UNSPECIFIED"
    error_message: str = ""


class ProjectsResponse(Wire):
    projects: list[ProjectOut]
    pagination: Pagination


class ProjectResponse(Wire):
    project: ProjectOut


class DeleteResponse(Wire):
    """`completed`: deleted within the request; false: deletion goes on in the background
    (the object shows WORKSPACE_STATE_DELETING until it is gone)."""

    completed: bool = True


class _Unsupported(Wire):
    """Determined's per-workspace agent user and Kubernetes settings: the 0.38.1 client sends
    them as null unless asked; a value is refused rather than silently dropped."""

    agent_user_group: Any = None
    cluster_namespace_meta: Any = None
    cluster_quota_pairs: Any = None

    def unsupported(self) -> str | None:
        if self.agent_user_group:
            return (
                "a workspace-wide agent user is not supported: link each user to an agent "
                "user instead (det user link-with-agent-user)"
            )
        if self.cluster_namespace_meta or self.cluster_quota_pairs:
            return "Kubernetes namespaces and quotas are not supported by this master"
        return None


class PostWorkspaceRequest(_Unsupported):
    name: str
    checkpoint_storage_config: dict[str, Any] | None = None
    default_compute_pool: str | None = None
    default_aux_pool: str | None = None
    # Resolute addition (admin only): pool -> slot quota.
    slot_quotas: SlotQuotas | None = None


class PatchWorkspaceRequest(_Unsupported):
    name: str | None = None
    checkpoint_storage_config: dict[str, Any] | None = None
    default_compute_pool: str | None = None
    default_aux_pool: str | None = None
    # The names the 0.38.1 client's `det workspace edit` sends.
    default_compute_resource_pool: str | None = None
    default_aux_resource_pool: str | None = None
    # Resolute addition (admin only): pool -> slot quota; a pool given null loses its quota,
    # a pool left out keeps it.
    slot_quotas: SlotQuotas | None = None


class PostProjectRequest(Wire):
    name: str
    workspace_id: int | None = Field(None, ge=0, le=INT32_MAX)
    description: str | None = None
    key: str | None = None


class PatchProjectRequest(Wire):
    name: str | None = None
    description: str | None = None
    key: str | None = None


class MoveExperimentRequest(Wire):
    destination_project_id: int = Field(ge=1, le=INT32_MAX)
    experiment_id: int | None = Field(None, ge=0, le=INT32_MAX)


class MoveProjectRequest(Wire):
    destination_workspace_id: int = Field(ge=1, le=INT32_MAX)
    project_id: int | None = Field(None, ge=0, le=INT32_MAX)
