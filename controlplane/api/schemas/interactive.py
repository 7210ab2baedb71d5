"""Notebooks, TensorBoards and shells on the wire: v1Notebook, v1Tensorboard, v1Shell."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from controlplane.api.schemas.commands import Command
from controlplane.api.schemas.common import JsonConfigOrText, Wire
from controlplane.domain.limits import INTERACTIVE_DATA_CHARS


class AgentUserGroup(Wire):
    """Who the shell's ssh login is (the task's Unix user)."""

    user: str = ""
    group: str = ""


class InteractiveTask(Command):
    """v1Notebook / v1Tensorboard / v1Shell: a command plus where the proxy serves it."""

    service_address: str | None = None
    experiment_ids: list[int] = Field(default_factory=list)
    trial_ids: list[int] = Field(default_factory=list)
    private_key: str | None = None
    agent_user_group: AgentUserGroup | None = None


class LaunchInteractiveRequest(Wire):
    """v1LaunchNotebookRequest / v1LaunchTensorboardRequest / v1LaunchShellRequest."""

    config: JsonConfigOrText | None = Field(None, description="The task's config.")
    files: list[dict[str, Any]] | None = Field(None, description="The context directory.")
    template_name: str | None = Field(None, max_length=255, description="Template to merge.")
    workspace_id: int | None = Field(None, ge=0, le=2**31 - 1)
    preview: bool = False
    experiment_ids: list[int] | None = Field(None, max_length=1000)
    trial_ids: list[int] | None = Field(None, max_length=1000)
    # The real client sends `data` (base64 of a JSON document); `filters` is TensorBoard's bulk
    # selection. Neither is read, but both are bounded like any other input.
    filters: dict[str, Any] | None = Field(None, description="Not read (Determined's filters).")
    data: str | None = Field(None, max_length=INTERACTIVE_DATA_CHARS, description="Not read.")


class AllocationProxyAddress(Wire):
    proxy_address: str = Field(max_length=255, description="host:port of the task's service.")
    proxy_secret: str | None = Field(
        None,
        min_length=16,
        max_length=128,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="Ours: the secret the proxy must present (header X-Resolute-Proxy-Secret).",
    )
    allocation_id: str | None = None


class Empty(Wire):
    pass
