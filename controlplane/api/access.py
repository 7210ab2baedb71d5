"""The class of every route, and the check that applies it to the caller of each request.

`RULES` names every (method, path) the app serves; tests/api/test_task_tokens.py fails when a
route has no rule, so a new route is classified before it ships. At run time a route without a
rule refuses every task token (users pass on to the route's own checks).

`authorize` runs where the caller is resolved (`deps.provide_principal`), so it covers every
route that has a caller. The route's own checks (ownership, admin) still run afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from litestar import Request
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.route_permissions import ANYWHERE, HOLDINGS_READ_WITHOUT_NEED, NEEDS
from controlplane.db.models import User
from controlplane.domain import rbac
from controlplane.domain.access import CallerKind, RouteClass, Target, decide
from controlplane.domain.errors import PermissionDenied
from controlplane.services import audit, rbac_scopes
from controlplane.services import rbac as rbac_service
from controlplane.services.principals import Principal


@dataclass(frozen=True)
class Rule:
    route: RouteClass
    # The path parameter naming the object the route acts on, where a task's token must name
    # its own (trial_id, run_id, experiment_id, allocation_id, task_id, command_id).
    target: str | None = None


PUBLIC = Rule(RouteClass.PUBLIC)
ADMIN = Rule(RouteClass.ADMIN)
ACCOUNT = Rule(RouteClass.ACCOUNT)
READ = Rule(RouteClass.READ)
WRITE = Rule(RouteClass.OWNER_WRITE)
REPORT = Rule(RouteClass.TASK_REPORT)  # the route's own checks read the body's trial or task


def _write(target: str) -> Rule:
    return Rule(RouteClass.OWNER_WRITE, target)


def _report(target: str) -> Rule:
    return Rule(RouteClass.TASK_REPORT, target)


_EXP = "/api/v1/experiments/{experiment_id:int}"
_TRIAL = "/api/v1/trials/{trial_id:int}"
_ALLOC = "/api/v1/allocations/{allocation_id:str}"
_TPL = "/api/v1/templates/{template_name:str}"
_MODEL = "/api/v1/models/{model_name:str}"
_MODEL_VERSION = f"{_MODEL}/versions/{{version:int}}"
_WS = "/api/v1/workspaces/{workspace_id:int}"
_PROJECT = "/api/v1/projects/{project_id:int}"
_BINDINGS = "/api/v1/resource-pools/{pool_name:str}/workspace-bindings"
_GROUP = "/api/v1/groups/{group_id:int}"
_HOOK = "/api/v1/webhooks/{webhook_id:int}"

RULES: dict[tuple[str, str], Rule] = {
    # handshake, login, the agents' socket
    ("GET", "/info"): PUBLIC,
    ("GET", "/health"): PUBLIC,
    ("POST", "/api/v1/auth/login"): PUBLIC,
    ("GET", "/api/v1/master"): PUBLIC,  # Determined's GetMaster needs no login
    ("WS", "/agents"): Rule(RouteClass.AGENT),
    # The proxy to interactive tasks authenticates each request itself (bearer token or the
    # UI's `auth` cookie; owner or admin; a shell's WebSocket by its SSH key): api/proxy.py.
    ("WS", "/proxy"): PUBLIC,
    # Static pages that only send the browser on to /proxy/{id}/ (api/interactive_pages.py).
    ("GET", "/det/interactive/{rest:path}"): PUBLIC,
    ("GET", "/det/wait/{rest:path}"): PUBLIC,
    # the web UI's files (the app logs in through the API)
    ("GET", "/"): PUBLIC,
    ("GET", "/det"): PUBLIC,
    ("GET", "/det/{path:path}"): PUBLIC,
    # the OpenAPI schema and its viewers (Litestar's own routes)
    **{
        ("GET", f"/api/v1/openapi{tail}"): PUBLIC
        for tail in (
            "",
            "/elements",
            "/oauth2-redirect.html",
            "/openapi.json",
            "/openapi.yaml",
            "/openapi.yml",
            "/rapidoc",
            "/redoc",
            "/swagger",
            "/{path:str}",
        )
    },
    # admin only: users, master config, agents (pools are read-only here)
    ("POST", "/api/v1/users"): ADMIN,
    ("GET", "/api/v1/master/logs"): ADMIN,
    ("PUT", "/api/v1/config-policies/global/{workload_type:str}"): ADMIN,
    ("DELETE", "/api/v1/config-policies/global/{workload_type:str}"): ADMIN,
    ("PUT", "/api/v1/config-policies/workspaces/{workspace_id:int}/{workload_type:str}"): ADMIN,
    ("DELETE", "/api/v1/config-policies/workspaces/{workspace_id:int}/{workload_type:str}"): ADMIN,
    ("GET", "/api/v1/config-policies/global/{workload_type:str}"): READ,
    ("GET", "/api/v1/config-policies/workspaces/{workspace_id:int}/{workload_type:str}"): READ,
    ("POST", "/api/v1/agents/{agent_id:str}/slots/{slot_id:str}/enable"): ADMIN,
    ("POST", "/api/v1/agents/{agent_id:str}/slots/{slot_id:str}/disable"): ADMIN,
    ("GET", "/api/v1/agents/{agent_id:str}/slots"): READ,
    ("GET", "/api/v1/agents/{agent_id:str}/slots/{slot_id:str}"): READ,
    ("PATCH", "/api/v1/users"): ADMIN,
    ("PATCH", "/api/v1/master/config"): ADMIN,
    # Kubernetes-only endpoints (api/kubernetes.py): empty reads, refused writes
    ("POST", "/api/v1/namespace-bindings/bulk-auto-create"): ADMIN,
    ("POST", f"{_WS}/namespace-bindings"): ADMIN,
    ("DELETE", f"{_WS}/namespace-bindings"): ADMIN,
    ("POST", f"{_WS}/set-resource-quota"): ADMIN,
    ("GET", "/api/v1/k8s-resource-managers"): READ,
    ("GET", "/api/v1/namespace-bindings/workspace-ids-with-default-bindings"): READ,
    ("GET", f"{_WS}/list-namespace-bindings"): READ,
    ("GET", f"{_WS}/get-k8s-resource-quotas"): READ,
    ("GET", "/api/v1/master/cluster_message"): ADMIN,
    ("PUT", "/api/v1/master/cluster_message"): ADMIN,
    ("DELETE", "/api/v1/master/cluster_message"): ADMIN,
    ("POST", "/api/v1/cleanup_logs"): ADMIN,
    ("GET", "/api/v1/master/config"): ADMIN,
    ("POST", "/api/v1/agents/{agent_id:str}/enable"): ADMIN,
    ("POST", "/api/v1/agents/{agent_id:str}/disable"): ADMIN,
    # which workspaces may use a pool (api/workspace_pools.py)
    **{(verb, _BINDINGS): ADMIN for verb in ("POST", "DELETE", "PUT")},
    # user groups, role assignments and the audit log (api/rbac.py, api/audit.py)
    ("POST", "/api/v1/groups"): ADMIN,
    ("PUT", _GROUP): ADMIN,
    ("DELETE", _GROUP): ADMIN,
    ("PATCH", "/api/v1/users/assignments"): ADMIN,
    ("POST", "/api/v1/roles/add-assignments"): ADMIN,
    ("POST", "/api/v1/roles/remove-assignments"): ADMIN,
    ("GET", "/api/v1/master/audit"): ADMIN,
    # a user's own account (an admin's for others): never a task
    ("POST", "/api/v1/auth/logout"): ACCOUNT,
    # access tokens: a task's token may not mint a lasting one for its owner, nor list them
    # what the web UI remembers per user: the user's own, never a task's business
    ("GET", "/api/v1/users/setting"): ACCOUNT,
    ("POST", "/api/v1/users/setting"): ACCOUNT,
    ("POST", "/api/v1/users/setting/reset"): ACCOUNT,
    ("POST", "/api/v1/users/activity"): ACCOUNT,
    ("GET", "/api/v1/user/projects/activity"): ACCOUNT,
    ("POST", f"{_WS}/pin"): ACCOUNT,
    ("POST", f"{_WS}/unpin"): ACCOUNT,
    ("POST", "/api/v1/tokens"): ACCOUNT,
    ("GET", "/api/v1/tokens"): ACCOUNT,
    ("PATCH", "/api/v1/tokens/{token_id:int}"): ACCOUNT,
    ("PATCH", "/api/v1/users/{user_id:int}"): ACCOUNT,
    ("POST", "/api/v1/users/{user_id:int}/password"): ACCOUNT,
    # reads
    ("GET", "/api/v1/me"): READ,
    ("POST", "/api/v1/groups/search"): READ,
    ("GET", _GROUP): READ,
    ("POST", "/api/v1/roles/search"): READ,
    ("POST", "/api/v1/roles/search/by-ids"): READ,
    ("POST", "/api/v1/roles/search/by-assignability"): READ,
    ("GET", "/api/v1/roles/search/by-user/{user_id:int}"): READ,
    ("GET", "/api/v1/roles/search/by-group/{group_id:int}"): READ,
    ("GET", "/api/v1/roles/workspace/{workspace_id:int}"): READ,
    ("GET", "/api/v1/permissions/summary"): READ,
    ("GET", "/api/v1/users"): READ,
    ("GET", "/api/v1/auth/user"): READ,
    ("GET", "/api/v1/master/telemetry"): READ,
    ("GET", "/api/v1/users/{user_id:int}"): READ,
    ("GET", "/api/v1/users/{username:str}/by-username"): READ,
    ("GET", "/api/v1/agents"): READ,
    ("GET", "/api/v1/agents/{agent_id:str}"): READ,
    ("GET", "/api/v1/resource-pools"): READ,
    ("GET", "/api/v1/resource-pools/{pool_name:str}/provisioner"): READ,
    ("GET", _BINDINGS): READ,
    ("GET", f"{_WS}/available-resource-pools"): READ,
    ("GET", "/api/v1/job-queues-v2"): READ,
    ("GET", "/api/v1/job-queues"): READ,
    ("GET", "/api/v1/job-queues/stats"): READ,
    ("GET", "/api/v1/experiments"): READ,
    ("GET", _EXP): READ,
    ("GET", f"{_EXP}/checkpoints"): READ,
    ("GET", f"{_EXP}/checkpoint_gc"): READ,
    ("GET", f"{_EXP}/preview_gc"): READ,
    ("GET", "/experiments/{experiment_id:int}/preview_gc"): READ,
    ("GET", f"{_EXP}/model_def"): READ,
    ("GET", f"{_EXP}/searcher/best_searcher_validation_metric"): READ,
    ("GET", f"{_EXP}/trials"): READ,
    ("GET", _TRIAL): READ,
    ("GET", "/api/v1/trials/by-external-id/{external_experiment_id:str}/{external_trial_id:str}"): (
        READ
    ),
    ("GET", f"{_TRIAL}/checkpoints"): READ,
    ("GET", f"{_TRIAL}/logs"): READ,
    ("GET", f"{_TRIAL}/logs/fields"): READ,
    ("GET", f"{_TRIAL}/workloads"): READ,
    ("GET", f"{_TRIAL}/profiler/available_series"): READ,
    ("GET", f"{_TRIAL}/profiler/metrics"): READ,
    # what work cost and historical usage (api/usage.py)
    ("GET", f"{_EXP}/cost"): READ,
    ("GET", f"{_TRIAL}/cost"): READ,
    ("GET", "/api/v1/resources/cost"): READ,
    ("GET", "/api/v1/resources/allocation/aggregated"): READ,
    ("GET", "/api/v1/resources/allocation/raw"): READ,
    ("GET", "/resources/allocation/aggregated"): READ,
    ("GET", "/resources/allocation/raw"): READ,
    ("GET", "/resources/allocation/allocations-csv"): READ,
    ("GET", "/api/v1/trials/metrics/trial_metrics"): READ,
    ("GET", "/api/v1/trials/metrics/training_metrics"): READ,
    ("GET", "/api/v1/trials/metrics/validation_metrics"): READ,
    ("GET", "/api/v1/checkpoints/{checkpoint_uuid:str}"): READ,
    ("GET", "/api/v1/commands"): READ,
    ("GET", "/api/v1/commands/{command_id:str}"): READ,
    ("GET", "/api/v1/notebooks"): READ,
    ("GET", "/api/v1/notebooks/{notebook_id:str}"): READ,
    ("GET", "/api/v1/tensorboards"): READ,
    ("GET", "/api/v1/tensorboards/{tensorboard_id:str}"): READ,
    ("GET", "/api/v1/shells"): READ,
    ("GET", "/api/v1/shells/{shell_id:str}"): READ,
    ("GET", "/api/v1/tasks"): READ,
    ("GET", "/api/v1/tasks/{task_id:str}"): READ,
    ("GET", "/api/v1/tasks/{task_id:str}/acceleratorData"): READ,
    ("GET", "/api/v1/tasks/{task_id:str}/context_directory"): READ,
    ("GET", "/api/v1/tasks/{task_id:str}/logs"): READ,
    ("GET", "/api/v1/tasks/{task_id:str}/logs/fields"): READ,
    ("GET", "/api/v1/tasks/{task_id:str}/config"): READ,
    ("GET", "/api/v1/templates"): READ,
    ("GET", _TPL): READ,
    ("GET", "/api/v1/workspaces"): READ,
    ("GET", _WS): READ,
    ("GET", f"{_WS}/projects"): READ,
    ("GET", _PROJECT): READ,
    ("GET", "/api/v1/models"): READ,
    ("GET", "/api/v1/model/labels"): READ,
    ("GET", _MODEL): READ,
    ("GET", f"{_MODEL}/versions"): READ,
    ("GET", _MODEL_VERSION): READ,
    ("GET", "/api/v1/projects/{project_id:int}/columns"): READ,
    ("POST", "/api/v1/experiments-search"): READ,
    ("GET", "/api/v1/trials/time-series"): READ,
    ("GET", "/api/v1/webhooks"): READ,
    # experiment data reads (api/experiment_files.py, api/project_metric_ranges.py)
    ("GET", f"{_EXP}/file_tree"): READ,
    ("POST", f"{_EXP}/file"): READ,
    ("GET", f"{_EXP}/validation-history"): READ,
    ("GET", "/api/v1/experiment/labels"): READ,
    ("GET", f"{_PROJECT}/experiments/metric-ranges"): READ,
    ("POST", "/api/v1/preview-hp-search"): READ,  # reads nothing stored
    # trial source infos (api/trial_sources.py): the reads show what the caller may view
    ("GET", "/api/v1/checkpoints/{checkpoint_uuid:str}/metrics"): READ,
    ("GET", f"{_MODEL_VERSION}/metrics"): READ,
    ("GET", "/api/v1/experiments/metrics-stream/metric-names"): READ,
    **{
        ("GET", f"{_EXP}/metrics-stream/{kind}"): READ
        for kind in ("batches", "trials-snapshot", "trials-sample")
    },
    # a checkpoint's metadata (api/checkpoint_metadata.py): its experiment's owner or an admin
    ("POST", "/api/v1/checkpoints/{checkpoint_uuid:str}/metadata"): WRITE,
    # changes their owner (or an admin) may make; a trial only to its own trial and experiment
    ("POST", "/api/v1/experiments"): WRITE,
    # detached runs (api/unmanaged.py): a user's own session, never a task's token
    ("PUT", "/api/v1/experiments/by-external-id/{external_experiment_id:str}"): WRITE,
    ("POST", "/api/v1/trials"): WRITE,
    ("PUT", "/api/v1/trials"): WRITE,
    ("POST", "/api/v1/experiments/continue"): WRITE,
    ("PATCH", _EXP): _write("experiment_id"),
    # labels (api/experiment_labels.py): as PATCH, their owner or an admin
    ("PUT", f"{_EXP}/labels/{{label:path}}"): _write("experiment_id"),
    ("DELETE", f"{_EXP}/labels/{{label:path}}"): _write("experiment_id"),
    # deletions (api/experiment_deletion.py): the owner or an admin, ended experiments only
    ("DELETE", _EXP): _write("experiment_id"),
    ("DELETE", f"{_EXP}/tensorboard-files"): _write("experiment_id"),
    ("DELETE", f"{_PROJECT}/experiments/delete"): WRITE,
    **{
        ("POST", f"{_EXP}/{verb}"): _write("experiment_id")
        for verb in ("activate", "archive", "cancel", "kill", "pause", "unarchive")
    },
    ("POST", f"{_TRIAL}/kill"): _write("trial_id"),
    ("POST", f"{_EXP}/checkpoint_gc"): _write("experiment_id"),
    ("DELETE", "/api/v1/checkpoints"): WRITE,
    ("POST", "/api/v1/checkpoints/rm"): WRITE,
    ("PUT", "/api/v1/checkpoints/{checkpoint_uuid:str}/protection"): WRITE,
    # bulk changes: each experiment is checked on its own and refused in its result
    **{
        ("POST", f"/api/v1/experiments/{verb}"): WRITE
        for verb in ("activate", "archive", "cancel", "kill", "move", "pause", "unarchive")
    },
    ("PUT", f"{_PROJECT}/experiments/retain_logs"): WRITE,
    ("POST", f"{_PROJECT}/notes"): WRITE,
    ("PUT", f"{_PROJECT}/notes"): WRITE,
    ("GET", "/api/v1/projects/key/{key:str}"): READ,
    ("GET", f"{_PROJECT}/metadata/{{key:str}}"): READ,
    ("PUT", f"{_EXP}/retain_logs"): WRITE,
    ("PUT", f"{_TRIAL}/retain_logs"): WRITE,
    ("GET", f"{_TRIAL}/remaining_log_retention_days"): READ,
    ("POST", "/api/v1/runs"): READ,
    **{
        ("POST", f"/api/v1/runs/{verb}"): WRITE
        for verb in ("kill", "pause", "resume", "archive", "unarchive", "move", "delete")
    },
    **{
        ("POST", f"{_PROJECT}/experiments/{verb}"): WRITE
        for verb in ("activate", "archive", "cancel", "kill", "move", "pause", "unarchive")
    },
    ("POST", "/api/v1/job-queues"): WRITE,
    # webhooks: global ones are an admin's, a workspace's its owner's (services/webhooks.py)
    ("POST", "/api/v1/webhooks"): WRITE,
    ("PATCH", _HOOK): WRITE,
    ("DELETE", _HOOK): WRITE,
    ("POST", f"{_HOOK}/test"): WRITE,
    ("POST", "/api/v1/commands"): WRITE,
    ("POST", "/api/v1/commands/{command_id:str}/kill"): _write("command_id"),
    ("POST", "/api/v1/generic-tasks"): WRITE,
    ("POST", "/api/v1/tasks/{task_id:str}/kill"): _write("task_id"),
    ("POST", "/api/v1/tasks/{task_id:str}/pause"): _write("task_id"),
    ("POST", "/api/v1/tasks/{task_id:str}/unpause"): _write("task_id"),
    ("POST", "/api/v1/notebooks"): WRITE,
    ("POST", "/api/v1/tensorboards"): WRITE,
    ("POST", "/api/v1/shells"): WRITE,
    ("POST", "/api/v1/notebooks/{notebook_id:str}/kill"): _write("notebook_id"),
    ("POST", "/api/v1/tensorboards/{tensorboard_id:str}/kill"): _write("tensorboard_id"),
    ("POST", "/api/v1/shells/{shell_id:str}/kill"): _write("shell_id"),
    ("POST", "/api/v1/commands/{command_id:str}/set_priority"): _write("command_id"),
    ("POST", "/api/v1/notebooks/{notebook_id:str}/set_priority"): _write("notebook_id"),
    ("POST", "/api/v1/tensorboards/{tensorboard_id:str}/set_priority"): _write("tensorboard_id"),
    ("POST", "/api/v1/shells/{shell_id:str}/set_priority"): _write("shell_id"),
    ("POST", _TPL): WRITE,
    ("PATCH", _TPL): WRITE,
    ("PUT", _TPL): WRITE,
    ("PATCH", "/api/v1/template/rename"): WRITE,
    ("DELETE", _TPL): WRITE,
    # workspaces, projects and the model registry: the services check ownership
    ("POST", "/api/v1/workspaces"): WRITE,
    ("PATCH", _WS): WRITE,
    ("DELETE", _WS): WRITE,
    ("POST", f"{_WS}/archive"): WRITE,
    ("POST", f"{_WS}/unarchive"): WRITE,
    ("POST", f"{_WS}/projects"): WRITE,
    ("PATCH", _PROJECT): WRITE,
    ("DELETE", _PROJECT): WRITE,
    ("POST", f"{_PROJECT}/archive"): WRITE,
    ("POST", f"{_PROJECT}/unarchive"): WRITE,
    ("POST", f"{_PROJECT}/move"): WRITE,
    ("POST", f"{_EXP}/move"): _write("experiment_id"),
    ("POST", "/api/v1/models"): WRITE,
    ("PATCH", _MODEL): WRITE,
    ("DELETE", _MODEL): WRITE,
    ("POST", f"{_MODEL}/archive"): WRITE,
    ("POST", f"{_MODEL}/unarchive"): WRITE,
    ("POST", f"{_MODEL}/move"): WRITE,
    ("POST", f"{_MODEL}/versions"): WRITE,
    ("PATCH", _MODEL_VERSION): WRITE,
    ("DELETE", _MODEL_VERSION): WRITE,
    # what a running task reports or asks about itself
    ("POST", f"{_TRIAL}/metrics"): _report("trial_id"),
    ("POST", f"{_TRIAL}/training_metrics"): _report("trial_id"),
    ("POST", f"{_TRIAL}/validation_metrics"): _report("trial_id"),
    ("POST", f"{_TRIAL}/metrics/batch"): _report("trial_id"),
    ("POST", f"{_TRIAL}/progress"): _report("trial_id"),
    ("POST", f"{_TRIAL}/runner/metadata"): _report("trial_id"),
    ("POST", f"{_TRIAL}/early_exit"): _report("trial_id"),
    ("POST", "/api/v1/runs/start"): REPORT,
    ("GET", "/api/v1/runs/{run_id:int}/metadata"): _report("run_id"),
    ("POST", "/api/v1/runs/{run_id:int}/metadata"): _report("run_id"),
    ("POST", "/api/v1/webhooks/custom"): REPORT,
    ("POST", "/api/v1/trial-source-info"): REPORT,  # the body names the trial
    ("POST", "/api/v1/checkpoints"): REPORT,
    ("PATCH", "/api/v1/checkpoints"): REPORT,
    ("POST", "/api/v1/task/logs"): REPORT,
    ("POST", "/task-logs"): REPORT,
    ("POST", f"{_TRIAL}/start"): _report("trial_id"),
    ("PATCH", _TRIAL): _report("trial_id"),
    ("GET", f"{_ALLOC}/signals/preemption"): _report("allocation_id"),
    ("GET", _ALLOC): _report("allocation_id"),
    ("PUT", "/api/v1/notebooks/{notebook_id:str}/report_idle"): _report("notebook_id"),
    ("POST", f"{_ALLOC}/signals/pending_preemption"): _report("allocation_id"),
    ("POST", f"{_ALLOC}/all_gather"): _report("allocation_id"),
    ("POST", f"{_ALLOC}/notify_container_running"): _report("allocation_id"),
    ("POST", f"{_ALLOC}/signals/ack_preemption"): _report("allocation_id"),
    ("POST", f"{_ALLOC}/acceleratorData"): _report("allocation_id"),
    ("POST", f"{_ALLOC}/proxy_address"): _report("allocation_id"),
    ("POST", f"{_ALLOC}/ready"): _report("allocation_id"),
    ("GET", f"{_ALLOC}/resources/{{resources_id:str}}/rendezvous"): _report("allocation_id"),
}


# The path parameters a rule may name as its target, and what each names.
TARGETS = {
    "trial_id": "trial",
    "run_id": "trial",
    "experiment_id": "experiment",
    "allocation_id": "allocation",
    "task_id": "task",
    "command_id": "command",
    "notebook_id": "notebook",
    "tensorboard_id": "tensorboard",
    "shell_id": "shell",
}


def caller_kind(principal: Principal) -> CallerKind:
    if principal.allocation is not None:
        return CallerKind.TRIAL if principal.task_type == "TRIAL" else CallerKind.TASK
    return CallerKind.ADMIN if principal.user.admin else CallerKind.USER


def _own(principal: Principal, param: str) -> object:
    alloc = principal.allocation
    if param in ("trial_id", "run_id"):
        return principal.trial_id
    if param == "experiment_id":
        return principal.experiment_id
    if param == "allocation_id":
        return alloc.allocation_id if alloc is not None else None
    if param in ("task_id", "command_id", "notebook_id", "tensorboard_id", "shell_id"):
        return alloc.task_id if alloc is not None else None
    raise ValueError(f"unknown target parameter {param!r}")


def target_of(principal: Principal, param: str | None, params: Mapping[str, Any]) -> Target:
    """Whether the path names the calling task's own object (users own none in this sense)."""
    if param is None:
        return Target.NONE
    own = _own(principal, param)
    if own is None or str(params.get(param)) != str(own):
        return Target.OTHER
    return Target.OWN


def rule_for(request: Request[Any, Any, Any]) -> Rule | None:
    method = request.method
    for path in request.route_handler.paths:
        rule = RULES.get((method, path))
        if rule is not None:
            return rule
    return None


def authorize(
    request: Request[Any, Any, Any], principal: Principal, *, rbac_on: bool = False
) -> None:
    """Refuse the request (403) where the route's class does not admit this caller.

    With RBAC on, a user's (not a task's) admin-only routes are judged by their permission
    instead (`authorize_rbac`): a ClusterAdmin need not be an admin user.
    """
    rule = rule_for(request)
    route = rule.route if rule is not None else None
    kind = caller_kind(principal)
    if rbac_on and kind is CallerKind.USER and route is RouteClass.ADMIN:
        return
    target = target_of(principal, rule.target if rule else None, request.path_params)
    decision = decide(kind, route, target)
    if decision.allowed:
        return
    named = ""
    if rule is not None and rule.target is not None and target is Target.OTHER:
        named = f", not for {TARGETS[rule.target]} {request.path_params.get(rule.target)}"
    raise PermissionDenied(f"{decision.reason}{named} ({request.method} {request.url.path})")


def _key(request: Request[Any, Any, Any]) -> tuple[str, str] | None:
    method = request.method
    for path in request.route_handler.paths:
        if (method, path) in NEEDS:
            return method, path
    return None


async def _body(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """The JSON body (Litestar keeps it read, so the handler parses it again as usual)."""
    try:
        body = await request.json()
    except Exception:  # a bad body: the handler answers it with its 400
        return {}
    return body if isinstance(body, dict) else {}


async def _named_workspace(
    db: AsyncSession, body: Mapping[str, Any], keys: tuple[tuple[str, str], ...]
) -> int | None:
    """The workspace of the first of `keys` (body key, kind) the body names by a valid id."""
    for key, kind in keys:
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return await rbac_scopes.workspace_of(db, kind, value)
    return None


# Where a creation's body puts it, and where a move's body sends its object.
_CREATED_IN = (("projectId", "project"), ("workspaceId", "workspace"))
_MOVED_TO = (("destinationProjectId", "project"), ("destinationWorkspaceId", "workspace"))


def elevated(user: User) -> User:
    """The caller as the services see it once the route's permission stood in for their
    owner-or-admin check: a detached copy with admin rights, for this request only."""
    return User(
        id=user.id,
        username=user.username,
        display_name=user.display_name,
        password_hash="",
        admin=True,
        active=user.active,
        created_at=user.created_at,
        modified_at=user.modified_at,
    )


async def authorize_rbac(
    request: Request[Any, Any, Any],
    principal: Principal,
    db: AsyncSession,
    cache: rbac_service.HeldCache | None,
) -> Principal:
    """RBAC on: the route's permission (`route_permissions.NEEDS`) in its scope decides.

    An admin user holds ClusterAdmin implicitly. A task's token is judged with its owner's
    assignments after its own least-privilege rules (`authorize`), and is never elevated.
    Returns the principal the handler sees: with what it holds (lists show the workspaces
    where it holds their view permission), elevated where the table says so.
    """
    key = _key(request)
    need = NEEDS.get(key) if key is not None else None
    if caller_kind(principal) is CallerKind.ADMIN or (
        need is None and key not in HOLDINGS_READ_WITHOUT_NEED
    ):
        return principal  # (what tasks report, on every step, costs nothing more)
    admin = False
    if principal.allocation is not None:  # the owner's own admin flag (the principal's is off)
        admin = bool(await db.scalar(select(User.admin).where(User.id == principal.user.id)))
    holdings = rbac.Holdings(await rbac_service.held_by(db, principal.user.id, cache), admin)
    if not admin:
        principal = replace(principal, holdings=holdings)
    if need is None:
        return principal
    scope: rbac.Scope = rbac.ANYWHERE if need.scope == ANYWHERE else None
    body = await _body(request) if need.body or need.lands is not None else {}
    if need.kind is not None:
        ws = await rbac_scopes.workspace_of(db, need.kind, request.path_params.get(need.scope))
        # No such object: it needs the permission somewhere; the route answers 404 itself.
        scope = rbac.ANYWHERE if ws is None else ws
    elif need.body and (named := await _named_workspace(db, body, _CREATED_IN)) is not None:
        scope = named
    _require(holdings, need.permission, scope, request)
    if need.lands is not None:
        if (dest := await _named_workspace(db, body, _MOVED_TO)) is not None:
            _require(holdings, need.lands, dest, request)
        # where the services place it once resolved (config names, the default workspace)
        rbac_scopes.expect_placement(db, rbac_scopes.Placement(holdings, need.lands))
    if (
        principal.allocation is None
        and need.elevate_with is not None
        and not isinstance(scope, rbac.Anywhere)
        and holdings.decide(need.elevate_with, scope).allowed
    ):
        return replace(principal, user=elevated(principal.user))
    return principal


def _require(
    holdings: rbac.Holdings,
    permission: rbac.Permission,
    scope: rbac.Scope,
    request: Request[Any, Any, Any],
) -> None:
    decision = holdings.decide(permission, scope)
    if not decision.allowed:
        raise PermissionDenied(f"{decision.reason} ({request.method} {request.url.path})")


def _route_path(request: Request[Any, Any, Any]) -> str:
    key = _key(request)
    return key[1] if key is not None else request.url.path


async def audit_intent(
    request: Request[Any, Any, Any], principal: Principal, db: AsyncSession
) -> audit.Intent | None:
    """What of this request goes to the audit log: every admin-only change (users, groups,
    roles, pools, agents), a change to another user's account, and every change an admin
    (or a holder of a role standing in for one) makes to an object another user owns."""
    if request.method in ("GET", "HEAD", "WS") or principal.allocation is not None:
        return None
    rule = rule_for(request)
    if rule is None or rule.route in (RouteClass.PUBLIC, RouteClass.AGENT):
        return None
    params = {k: str(v) for k, v in request.path_params.items()}
    me = principal.user.id
    wanted = rule.route is RouteClass.ADMIN
    if rule.route is RouteClass.ACCOUNT:
        wanted = "user_id" in params and params["user_id"] != str(me)
    elif rule.route is RouteClass.OWNER_WRITE and principal.user.admin:
        key = _key(request)
        need = NEEDS.get(key) if key is not None else None
        if need is not None and need.kind is not None:
            owner = await rbac_scopes.owner_of(db, need.kind, params.get(need.scope))
            wanted = owner is not None and owner != me
        else:
            # Bulk changes name other users' objects in their body; a creation makes the
            # admin's own object, which is nobody else's business (and every one would cost
            # an INSERT).
            wanted = need is None or not need.body
    if not wanted:
        return None
    client = request.client
    return audit.Intent(
        actor_id=me,
        actor=principal.user.username,
        method=request.method,
        route=_route_path(request),
        path=request.url.path,
        targets=params,
        client_address=client.host if client is not None else None,
    )
