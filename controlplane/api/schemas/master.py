"""Master identity on the wire (`/info`, `/api/v1/master`)."""

from __future__ import annotations

from pydantic import BaseModel

from controlplane.api.schemas.common import Wire


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


class MasterConfigResponse(Wire):
    config: dict[str, object]
