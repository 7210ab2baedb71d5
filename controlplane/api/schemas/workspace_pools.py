"""RP-workspace bindings on the wire (Determined's v1BindRPToWorkspaceRequest and friends)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from controlplane.api.schemas.common import INT32_MAX, Pagination, ShortText, Wire


def _json_integer(value: Any) -> Any:
    # Litestar validates bodies with strict=False, which overrides pydantic's StrictInt: true
    # and "8" would pass as 1 and 8. A count of slots or a workspace id is a JSON integer.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be a JSON integer")
    return value


JsonInt = Annotated[int, BeforeValidator(_json_integer)]
WorkspaceId = Annotated[JsonInt, Field(ge=1, le=INT32_MAX)]
# A workspace's slot quota in one pool; null in a patch removes it.
SlotQuota = Annotated[JsonInt, Field(ge=0, le=INT32_MAX)]
SlotQuotas = dict[Annotated[str, Field(min_length=1, max_length=255)], SlotQuota | None]


class PoolWorkspacesRequest(Wire):
    """Bind, unbind and overwrite: the workspaces by id, by name, or both. The 0.38.1 client
    repeats the pool's name in the body; when given it must be the path's."""

    resource_pool_name: str | None = None
    workspace_ids: list[WorkspaceId] | None = Field(None, max_length=10_000)
    workspace_names: list[ShortText] | None = Field(None, max_length=10_000)


class WorkspacesBoundToPoolResponse(Wire):
    workspace_ids: list[int]
    pagination: Pagination


class PoolsAvailableToWorkspaceResponse(Wire):
    resource_pools: list[str]
    pagination: Pagination
