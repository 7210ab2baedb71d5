"""Config policies on the wire (Determined's Put/Get…ConfigPolicies)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import Int32, Wire


class PutConfigPoliciesRequest(Wire):
    # Determined's client sends the file's text; a mapping is accepted too.
    config_policies: str | dict[str, Any] = Field(default="")
    workload_type: str | None = Field(default=None, max_length=16)
    workspace_id: Int32 | None = None


class ConfigPoliciesResponse(Wire):
    config_policies: dict[str, Any] | None = None
