"""Run metadata and custom alerts (Determined's PostRunMetadata, GetRunMetadata, alerts)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import INT32_MAX, Int32, Wire


class PostRunMetadataRequest(Wire):
    # Any, not dict: a non-object gets the service's clear 400 rather than a schema dump.
    metadata: Any
    run_id: Int32 | None = None


class RunMetadataResponse(Wire):
    metadata: dict[str, Any]


class AlertData(Wire):
    title: str | None = None
    description: str | None = None
    level: str | None = Field(None, max_length=32)


class PostWebhookEventDataRequest(Wire):
    data: AlertData
    experiment_id: int = Field(ge=1, le=INT32_MAX)
    trial_id: int | None = Field(None, ge=1, le=INT32_MAX)
