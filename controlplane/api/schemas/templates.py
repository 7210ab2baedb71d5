"""Config templates on the wire."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import Pagination, Wire


class TemplateOut(Wire):
    name: str
    config: dict[str, Any]
    workspace_id: int


class TemplateResponse(Wire):
    template: TemplateOut


class TemplatesResponse(Wire):
    templates: list[TemplateOut]
    pagination: Pagination


class CreateTemplateRequest(Wire):
    name: str | None = Field(None, max_length=255)
    config: dict[str, Any]
    workspace_id: int = Field(0, ge=0, le=2**31 - 1)


class RenameTemplateRequest(Wire):
    old_name: str = Field(max_length=255)
    new_name: str = Field(max_length=255)
