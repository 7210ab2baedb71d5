"""Workspaces and projects on the wire."""

from __future__ import annotations

from controlplane.api.schemas.common import Pagination, Wire


class WorkspaceOut(Wire):
    id: int
    name: str
    archived: bool
    username: str
    user_id: int
    immutable: bool
    num_projects: int
    pinned: bool = False
    num_experiments: int
    state: str = "WORKSPACE_STATE_UNSPECIFIED"
    error_message: str = ""


class WorkspacesResponse(Wire):
    workspaces: list[WorkspaceOut]
    pagination: Pagination


class WorkspaceResponse(Wire):
    workspace: WorkspaceOut


class ProjectOut(Wire):
    id: int
    name: str
    key: str
    workspace_id: int
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
