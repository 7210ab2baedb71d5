"""`det config-policies` (Determined's /api/v1/config-policies/…): an admin sets, anyone who
may see the workspace reads; workload types EXPERIMENT and NTSC (notebooks, shells, commands,
TensorBoards). Submissions follow them (services/experiments.py, services/commands.py)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import delete, get, put
from litestar.params import JSONBody, Parameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.config_policies import (
    ConfigPoliciesResponse,
    PutConfigPoliciesRequest,
)
from controlplane.api.schemas.reports import Empty
from controlplane.domain import config_policies as rules
from controlplane.domain.errors import InvalidArgument
from controlplane.services import config_policies as service
from controlplane.services.workspaces import get_workspace

Workload = Annotated[str, Parameter(max_length=16)]
_GLOBAL = "/api/v1/config-policies/global/{workload_type:str}"
_WS = "/api/v1/config-policies/workspaces/{workspace_id:int}/{workload_type:str}"


def _out(policy: rules.Policy | None) -> ConfigPoliciesResponse:
    return ConfigPoliciesResponse(config_policies=None if policy is None else policy.wire())


def _text(data: PutConfigPoliciesRequest, workload: str) -> rules.Policy:
    if data.workload_type not in (None, "") and rules.workload(data.workload_type) != workload:
        raise InvalidArgument("body workloadType does not match the path")
    policies: Any = data.config_policies
    if isinstance(policies, dict):
        return rules.from_mapping(policies)
    return rules.parse(policies or "")


@get(_GLOBAL)
async def get_global(db: Db, principal: Caller, workload_type: Workload) -> ConfigPoliciesResponse:
    return _out(await service.get(db, None, rules.workload(workload_type)))


@put(_GLOBAL)
async def put_global(
    data: JSONBody[PutConfigPoliciesRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    workload_type: Workload,
) -> ConfigPoliciesResponse:
    workload = rules.workload(workload_type)
    policy = await service.put(
        db, principal.user, None, workload, _text(data, workload), ctx.clock()
    )
    return _out(policy)


@delete(_GLOBAL, status_code=200)
async def delete_global(db: Db, principal: Caller, workload_type: Workload) -> Empty:
    await service.remove(db, principal.user, None, rules.workload(workload_type))
    return Empty()


@get(_WS)
async def get_workspace_policies(
    db: Db, principal: Caller, workspace_id: Id32, workload_type: Workload
) -> ConfigPoliciesResponse:
    await get_workspace(db, workspace_id)
    return _out(await service.get(db, workspace_id, rules.workload(workload_type)))


@put(_WS)
async def put_workspace_policies(
    data: JSONBody[PutConfigPoliciesRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    workspace_id: Id32,
    workload_type: Workload,
) -> ConfigPoliciesResponse:
    await get_workspace(db, workspace_id)
    if data.workspace_id not in (None, 0, workspace_id):
        raise InvalidArgument("body workspaceId does not match the path")
    workload = rules.workload(workload_type)
    policy = await service.put(
        db, principal.user, workspace_id, workload, _text(data, workload), ctx.clock()
    )
    return _out(policy)


@delete(_WS, status_code=200)
async def delete_workspace_policies(
    db: Db, principal: Caller, workspace_id: Id32, workload_type: Workload
) -> Empty:
    await get_workspace(db, workspace_id)
    await service.remove(db, principal.user, workspace_id, rules.workload(workload_type))
    return Empty()


ROUTES = [
    get_global,
    put_global,
    delete_global,
    get_workspace_policies,
    put_workspace_policies,
    delete_workspace_policies,
]
