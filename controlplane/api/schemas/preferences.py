"""The web UI's per-user memory on the wire (Determined's v1UserWebSetting, activity, pins)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controlplane.api.schemas.common import Int32, Wire
from controlplane.api.schemas.workspaces import ProjectOut


class UserWebSetting(Wire):
    key: str = Field(max_length=255)
    value: str | None = Field(default=None, max_length=64 * 1024)
    storage_path: str | None = Field(default=None, max_length=255)


class UserSettingsResponse(Wire):
    settings: list[UserWebSetting]


class PostUserSettingRequest(Wire):
    settings: list[UserWebSetting] = Field(max_length=1000)


class PostUserActivityRequest(Wire):
    activity_type: Literal["ACTIVITY_TYPE_GET"]
    entity_type: Literal["ENTITY_TYPE_PROJECT"]
    entity_id: Int32


class ProjectsByActivityResponse(Wire):
    projects: list[ProjectOut]
