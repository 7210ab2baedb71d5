"""Master identity on the wire (`/info`, `/api/v1/master`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from controlplane.api.schemas.common import UtcTimestamp, Wire


class InfoResponse(BaseModel):
    """`/info` uses snake_case keys (it predates the protojson API)."""

    version: str
    master_id: str
    cluster_id: str
    cluster_name: str
    sso_providers: list[dict[str, str]] = []
    external_login_uri: str | None = None
    external_logout_uri: str | None = None
    branding: str = "resolute"
    rbac_enabled: bool = False
    strict_job_queue_control: bool = False
    user_management_enabled: bool = True


class MasterResponse(Wire):
    version: str
    master_id: str
    cluster_id: str
    cluster_name: str
    telemetry_enabled: bool = False
    external_login_uri: str | None = None
    external_logout_uri: str | None = None
    branding: str = "resolute"
    rbac_enabled: bool = False
    product: str = "PRODUCT_UNSPECIFIED"
    user_management_enabled: bool = True
    feature_switches: list[str] = []
    strict_job_queue_control: bool = False
    has_custom_logo: bool = False
    cluster_message: ClusterMessageOut | None = None


class MasterConfigResponse(Wire):
    config: dict[str, object]


class ClusterMessageOut(Wire):
    message: str
    start_time: datetime
    end_time: datetime | None = None
    created_time: datetime | None = None


class SetClusterMessageRequest(Wire):
    message: str = Field(max_length=4096)
    start_time: UtcTimestamp
    end_time: UtcTimestamp | None = None
    duration: str | None = Field(default=None, max_length=64)


class GetClusterMessageResponse(Wire):
    cluster_message: ClusterMessageOut | None = None


class LogConfig(Wire):
    level: str | None = Field(default=None, max_length=32)
    color: bool | None = None


class MasterConfigPatch(Wire):
    log: LogConfig | None = None


class FieldMask(Wire):
    paths: list[str] = Field(default_factory=list, max_length=16)


class PatchMasterConfigRequest(Wire):
    config: MasterConfigPatch | None = None
    field_mask: FieldMask | None = None


class TelemetryResponse(Wire):
    enabled: bool
    segment_key: str | None = None
