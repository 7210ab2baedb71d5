"""Determined's webhook messages (webhookv1.Webhook, Trigger and their requests)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import INT32_MAX, Wire
from controlplane.domain import webhooks as wh

_CONDITION_BYTES = 4096


class TriggerIn(Wire):
    trigger_type: str | None = None
    condition: dict[str, Any] | None = Field(None, max_length=16)


class WebhookIn(Wire):
    """PostWebhook's body (a v1Webhook without its id)."""

    name: str = Field("", max_length=wh.MAX_NAME_CHARS)
    url: str = Field(max_length=wh.MAX_URL_CHARS)
    webhook_type: str | None = None
    mode: str | None = None
    workspace_id: int | None = Field(None, ge=1, le=INT32_MAX)
    triggers: list[TriggerIn] | None = Field(None, max_length=wh.MAX_TRIGGERS)


class TriggerOut(Wire):
    id: int
    trigger_type: str
    condition: dict[str, Any]
    webhook_id: int


class WebhookOut(Wire):
    id: int
    name: str
    url: str
    webhook_type: str
    mode: str
    workspace_id: int | None = None
    triggers: list[TriggerOut]


class PostWebhookResponse(Wire):
    webhook: WebhookOut


class GetWebhooksResponse(Wire):
    webhooks: list[WebhookOut]


class PatchWebhook(Wire):
    url: str = Field(max_length=wh.MAX_URL_CHARS)


class TestWebhookResponse(Wire):
    completed: bool
