"""`integrations`: which webhooks an experiment fires (Determined's WebhooksConfigV0) and the
Pachyderm block (accepted as given)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from controlplane.domain import webhooks as wh

from .models_base import ConfigModel


class WebhooksConfig(ConfigModel):
    """`integrations.webhooks`: the experiment's choice among WEBHOOK_MODE_SPECIFIC webhooks."""

    webhook_id: list[Annotated[int, Field(ge=1, le=2**31 - 1)]] | None = Field(
        default=None, max_length=100, description="Specific webhooks it fires, by id."
    )
    webhook_name: list[Annotated[str, Field(max_length=wh.MAX_NAME_CHARS)]] | None = Field(
        default=None, max_length=100, description="Specific webhooks it fires, by name."
    )
    exclude: bool = Field(
        default=False, description="Fire no webhook at all, not even global ones."
    )


class IntegrationsConfig(ConfigModel):
    """Integrations with other systems."""

    webhooks: WebhooksConfig | None = Field(default=None, description="Webhooks it fires.")
    pachyderm: dict[str, Any] | None = Field(
        default=None, description="Pachyderm provenance (recorded as given)."
    )
