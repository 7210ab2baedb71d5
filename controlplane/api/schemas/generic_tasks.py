"""Generic tasks on the wire: v1CreateGenericTaskRequest/Response, v1GetGenericTaskConfigResponse,
v1KillGenericTaskRequest."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import Wire


class CreateGenericTaskRequest(Wire):
    """v1CreateGenericTaskRequest (`det task create` / `det task fork`)."""

    config: str = Field(
        max_length=1 << 20, description="The task config as YAML or JSON text ('' for a fork)."
    )
    context_directory: list[dict[str, Any]] = Field(
        default_factory=list, description="The context directory's files (v1File)."
    )
    project_id: int | None = Field(None, ge=1, le=2**31 - 1)
    forked_from: str | None = Field(None, max_length=128, description="Task to fork from.")
    parent_id: str | None = Field(None, max_length=128, description="The parent task.")
    inherit_context: bool | None = Field(None, description="Take the parent's context.")
    no_pause: bool | None = Field(None, description="Refuse pause requests.")


class CreateGenericTaskResponse(Wire):
    task_id: str
    warnings: list[str] = Field(default_factory=list)


class GetGenericTaskConfigResponse(Wire):
    """The task's config as JSON text (the client json-decodes it)."""

    config: str


class KillGenericTaskRequest(Wire):
    task_id: str | None = Field(None, max_length=128)
    kill_from_root: bool | None = None
