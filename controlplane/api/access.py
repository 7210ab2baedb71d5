"""The class of every route, and the check that applies it to the caller of each request.

`RULES` names every (method, path) the app serves; tests/api/test_task_tokens.py fails when a
route has no rule, so a new route is classified before it ships. At run time a route without a
rule refuses every task token (users pass on to the route's own checks).

`authorize` runs where the caller is resolved (`deps.provide_principal`), so it covers every
route that has a caller. The route's own checks (ownership, admin) still run afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from litestar import Request

from controlplane.domain.access import CallerKind, RouteClass, Target, decide
from controlplane.domain.errors import PermissionDenied
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

RULES: dict[tuple[str, str], Rule] = {
    # handshake, login, the agents' socket
    ("GET", "/info"): PUBLIC,
    ("POST", "/api/v1/auth/login"): PUBLIC,
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
    ("POST", "/api/v1/cleanup_logs"): ADMIN,
    ("GET", "/api/v1/master/config"): ADMIN,
    ("POST", "/api/v1/agents/{agent_id:str}/enable"): ADMIN,
    ("POST", "/api/v1/agents/{agent_id:str}/disable"): ADMIN,
    # a user's own account (an admin's for others): never a task
    ("POST", "/api/v1/auth/logout"): ACCOUNT,
    ("PATCH", "/api/v1/users/{user_id:int}"): ACCOUNT,
    ("POST", "/api/v1/users/{user_id:int}/password"): ACCOUNT,
    # reads
    ("GET", "/api/v1/me"): READ,
    ("GET", "/api/v1/master"): READ,
    ("GET", "/api/v1/users"): READ,
    ("GET", "/api/v1/users/{user_id:int}"): READ,
    ("GET", "/api/v1/users/{username:str}/by-username"): READ,
    ("GET", "/api/v1/agents"): READ,
    ("GET", "/api/v1/agents/{agent_id:str}"): READ,
    ("GET", "/api/v1/resource-pools"): READ,
    ("GET", "/api/v1/resource-pools/{pool_name:str}/provisioner"): READ,
    ("GET", "/api/v1/job-queues-v2"): READ,
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
    ("GET", f"{_TRIAL}/checkpoints"): READ,
    ("GET", f"{_TRIAL}/logs"): READ,
    ("GET", f"{_TRIAL}/workloads"): READ,
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
    # changes their owner (or an admin) may make; a trial only to its own trial and experiment
    ("POST", "/api/v1/experiments"): WRITE,
    ("POST", "/api/v1/experiments/continue"): WRITE,
    ("PATCH", _EXP): _write("experiment_id"),
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
    ("POST", "/api/v1/job-queues"): WRITE,
    ("POST", "/api/v1/commands"): WRITE,
    ("POST", "/api/v1/commands/{command_id:str}/kill"): _write("command_id"),
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
    ("POST", f"{_TRIAL}/metrics/batch"): _report("trial_id"),
    ("POST", f"{_TRIAL}/progress"): _report("trial_id"),
    ("POST", f"{_TRIAL}/runner/metadata"): _report("trial_id"),
    ("POST", f"{_TRIAL}/early_exit"): _report("trial_id"),
    ("POST", "/api/v1/runs/start"): REPORT,
    ("GET", "/api/v1/runs/{run_id:int}/metadata"): _report("run_id"),
    ("POST", "/api/v1/runs/{run_id:int}/metadata"): _report("run_id"),
    ("POST", "/api/v1/webhooks/custom"): REPORT,
    ("POST", "/api/v1/checkpoints"): REPORT,
    ("PATCH", "/api/v1/checkpoints"): REPORT,
    ("POST", "/api/v1/task/logs"): REPORT,
    ("GET", f"{_ALLOC}/signals/preemption"): _report("allocation_id"),
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


def authorize(request: Request[Any, Any, Any], principal: Principal) -> None:
    """Refuse the request (403) where the route's class does not admit this caller."""
    rule = rule_for(request)
    route = rule.route if rule is not None else None
    target = target_of(principal, rule.target if rule else None, request.path_params)
    decision = decide(caller_kind(principal), route, target)
    if decision.allowed:
        return
    named = ""
    if rule is not None and rule.target is not None and target is Target.OTHER:
        named = f", not for {TARGETS[rule.target]} {request.path_params.get(rule.target)}"
    raise PermissionDenied(f"{decision.reason}{named} ({request.method} {request.url.path})")
