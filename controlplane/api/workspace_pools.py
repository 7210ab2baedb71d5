"""RP-workspace bindings: `/api/v1/resource-pools/{name}/workspace-bindings` (bind, unbind,
overwrite: admin only; list: anyone) and `/api/v1/workspaces/{id}/available-resource-pools`,
in Determined 0.38.1's paths and shapes (services/workspace_pools.py holds the rules)."""

from __future__ import annotations

from typing import Annotated

from litestar import delete, get, post, put
from litestar.params import JSONBody, Parameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32, Limit, Offset, clamp_limit
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.reports import Empty
from controlplane.api.schemas.workspace_pools import (
    PoolsAvailableToWorkspaceResponse,
    PoolWorkspacesRequest,
    WorkspacesBoundToPoolResponse,
)
from controlplane.db.models import Workspace
from controlplane.domain.errors import InvalidArgument
from controlplane.services import workspace_pools as service
from controlplane.services.scheduling.pools import Scheduling
from controlplane.services.workspaces import get_workspace

PoolName = Annotated[str, Parameter(min_length=1, max_length=255)]
_BINDINGS = "/api/v1/resource-pools/{pool_name:str}/workspace-bindings"


def pool_names(scheduling: Scheduling) -> service.PoolNames:
    rm = scheduling.resources.resource_manager
    defaults = {p for p in (rm.default_compute_resource_pool, rm.default_aux_resource_pool) if p}
    return service.PoolNames(all=frozenset(scheduling.pools), defaults=frozenset(defaults))


async def _targets(db: Db, pool: str, data: PoolWorkspacesRequest) -> list[Workspace]:
    if data.resource_pool_name not in (None, "", pool):
        raise InvalidArgument(
            f"body resourcePoolName {data.resource_pool_name!r} does not match the path's {pool!r}"
        )
    return await service.workspaces_named(db, data.workspace_ids or [], data.workspace_names or [])


@post(_BINDINGS, status_code=200)
async def bind_pool(
    data: JSONBody[PoolWorkspacesRequest], db: Db, principal: Caller, ctx: Ctx, pool_name: PoolName
) -> Empty:
    """BindRPToWorkspace: the pool becomes usable only by the workspaces bound to it."""
    service.only_admin(principal.user, "bind resource pools to workspaces")
    targets = await _targets(db, pool_name, data)
    await service.bind(db, principal.user, pool_name, targets, pool_names(ctx.scheduling))
    return Empty()


@delete(_BINDINGS, status_code=200)
async def unbind_pool(
    data: JSONBody[PoolWorkspacesRequest], db: Db, principal: Caller, ctx: Ctx, pool_name: PoolName
) -> Empty:
    """UnbindRPFromWorkspace; a pool left with no binding is open to every workspace again."""
    service.only_admin(principal.user, "unbind resource pools from workspaces")
    targets = await _targets(db, pool_name, data)
    await service.unbind(db, principal.user, pool_name, targets, pool_names(ctx.scheduling))
    return Empty()


@put(_BINDINGS, status_code=200)
async def overwrite_pool_bindings(
    data: JSONBody[PoolWorkspacesRequest], db: Db, principal: Caller, ctx: Ctx, pool_name: PoolName
) -> Empty:
    """OverwriteRPWorkspaceBindings: exactly these workspaces (none: open to all)."""
    service.only_admin(principal.user, "bind resource pools to workspaces")
    targets = await _targets(db, pool_name, data)
    await service.overwrite(db, principal.user, pool_name, targets, pool_names(ctx.scheduling))
    return Empty()


def _page(total: int, offset: int, limit: int) -> tuple[slice, int]:
    page = clamp_limit(limit, default=-1)  # 0: everything, as Determined
    return (slice(offset, None) if page < 0 else slice(offset, offset + page)), page


@get(_BINDINGS)
async def list_workspaces_bound_to_pool(
    db: Db, principal: Caller, ctx: Ctx, pool_name: PoolName, offset: Offset = 0, limit: Limit = 0
) -> WorkspacesBoundToPoolResponse:
    """ListWorkspacesBoundToRP: the ids of the workspaces bound to the pool (none: unbound)."""
    pool_names(ctx.scheduling).check_exists(pool_name)
    ids = await service.bound_to_pool(db, pool_name)
    window, page = _page(len(ids), offset, limit)
    chunk = ids[window]
    return WorkspacesBoundToPoolResponse(
        workspace_ids=chunk, pagination=Pagination.of(offset, page, len(chunk), len(ids))
    )


@get("/api/v1/workspaces/{workspace_id:int}/available-resource-pools")
async def list_pools_available_to_workspace(
    db: Db, principal: Caller, ctx: Ctx, workspace_id: Id32, offset: Offset = 0, limit: Limit = 0
) -> PoolsAvailableToWorkspaceResponse:
    """ListRPsBoundToWorkspace: every pool the workspace may use, bound to it or unbound."""
    await get_workspace(db, workspace_id)
    pools = await service.available_pools(db, workspace_id, ctx.scheduling.pools)
    window, page = _page(len(pools), offset, limit)
    chunk = pools[window]
    return PoolsAvailableToWorkspaceResponse(
        resource_pools=chunk, pagination=Pagination.of(offset, page, len(chunk), len(pools))
    )


ROUTES = [
    bind_pool,
    unbind_pool,
    overwrite_pool_bindings,
    list_workspaces_bound_to_pool,
    list_pools_available_to_workspace,
]
