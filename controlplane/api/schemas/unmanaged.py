"""Detached (unmanaged) runs on the wire: v1CreateTrialRequest, v1PutTrialRequest,
v1StartTrialRequest/Response, v1PatchTrialRequest, and the lines core_v2 posts to /task-logs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import UtcTimestamp, Wire
from controlplane.api.schemas.experiments import TrialOut


class CreateTrialRequest(Wire):
    experiment_id: int = Field(ge=1, le=2**31 - 1)
    hparams: dict[str, Any] | None = None
    unmanaged: bool | None = None


class PutTrialRequest(Wire):
    create_trial_request: CreateTrialRequest
    external_trial_id: str = Field(min_length=1, max_length=255)


class TrialReply(Wire):
    """v1CreateTrialResponse, v1PutTrialResponse, v1PatchTrialResponse."""

    trial: TrialOut


class StartTrialRequest(Wire):
    trial_id: int | None = Field(None, ge=1, le=2**31 - 1)
    resume: bool | None = None


class StartTrialResponse(Wire):
    trial_run_id: int
    steps_completed: int
    latest_checkpoint: str | None = None


class PatchTrialRequest(Wire):
    trial_id: int | None = Field(None, ge=1, le=2**31 - 1)
    state: str | None = Field(None, max_length=64)


class FluentLogLine(Wire):
    """One line core_v2's log shipper posts to /task-logs (snake_case, as fluent bit sends)."""

    task_id: str = Field(max_length=128)
    log: str
    timestamp: UtcTimestamp | None = None
    rank: str | None = Field(None, max_length=16)
