"""Determined's Kubernetes-only endpoints on a cluster without Kubernetes.

Resolute schedules on agents (docs/api-compatibility.md): reads answer what such a cluster
has, which is nothing (no Kubernetes resource managers, namespace bindings or quotas), so
Determined's web UI and scripts that read them work unchanged; writes are refused with a 400
that says why, after the workspace they name is found (an unknown one is a 404)."""

from __future__ import annotations

from typing import Any

from litestar import delete, get, post
from litestar.params import JSONBody

from controlplane.api.deps import Caller, Db
from controlplane.api.params import Id32
from controlplane.domain.errors import InvalidArgument
from controlplane.services import workspaces
from controlplane.services.users import require_admin

NO_KUBERNETES = (
    "this cluster has no Kubernetes resource manager: namespace bindings and Kubernetes resource "
    "quotas need one (Resolute schedules on agents; per-pool slot quotas: det workspace create "
    "--slot-quota, docs/workspaces-and-models.md)"
)
_WS = "/api/v1/workspaces/{workspace_id:int}"


@get("/api/v1/k8s-resource-managers")
async def resource_managers(principal: Caller) -> dict[str, Any]:
    return {"resourceManagers": []}


@get("/api/v1/namespace-bindings/workspace-ids-with-default-bindings")
async def default_binding_workspaces(principal: Caller) -> dict[str, Any]:
    return {"workspaceIds": []}


@post("/api/v1/namespace-bindings/bulk-auto-create", status_code=200)
async def bulk_auto_create(data: JSONBody[dict[str, Any]], principal: Caller) -> dict[str, Any]:
    require_admin(principal.user)
    raise InvalidArgument(NO_KUBERNETES)


@get(_WS + "/list-namespace-bindings")
async def list_bindings(db: Db, principal: Caller, workspace_id: Id32) -> dict[str, Any]:
    await workspaces.get_workspace(db, workspace_id)
    return {"namespaceBindings": {}}


@get(_WS + "/get-k8s-resource-quotas")
async def resource_quotas(db: Db, principal: Caller, workspace_id: Id32) -> dict[str, Any]:
    await workspaces.get_workspace(db, workspace_id)
    return {"resourceQuotas": {}}


async def _refuse(db: Db, principal: Caller, workspace_id: int) -> dict[str, Any]:
    require_admin(principal.user)  # as on a Kubernetes cluster: bindings are an admin's
    await workspaces.get_workspace(db, workspace_id)
    raise InvalidArgument(NO_KUBERNETES)


@post(_WS + "/namespace-bindings", status_code=200)
async def set_bindings(
    data: JSONBody[dict[str, Any]], db: Db, principal: Caller, workspace_id: Id32
) -> dict[str, Any]:
    return await _refuse(db, principal, workspace_id)


@delete(_WS + "/namespace-bindings", status_code=200)
async def delete_bindings(db: Db, principal: Caller, workspace_id: Id32) -> dict[str, Any]:
    return await _refuse(db, principal, workspace_id)


@post(_WS + "/set-resource-quota", status_code=200)
async def set_quota(
    data: JSONBody[dict[str, Any]], db: Db, principal: Caller, workspace_id: Id32
) -> dict[str, Any]:
    return await _refuse(db, principal, workspace_id)


ROUTES = [
    resource_managers,
    default_binding_workspaces,
    bulk_auto_create,
    list_bindings,
    resource_quotas,
    set_bindings,
    delete_bindings,
    set_quota,
]
