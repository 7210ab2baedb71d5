"""The permission every route needs under RBAC (`security.authz.type: rbac`), and its scope.

One row per route of `access.RULES` (tests/api/test_rbac_routes.py checks both tables name
the same routes, and generates the route x role tests from this one). `None`: the route needs
no permission beyond its class (the handshake, a user's own account, what a task reports, the
caller's own permissions); its own checks still run.

A `Need` names its permission and where it is needed:
- `CLUSTER`: cluster-wide (global permissions: users, agents, pools, groups, roles);
- `ANYWHERE`: in at least one scope (lists, and bodies naming objects: the route's own
  checks then judge each object, owner-or-admin);
- an object kind and the path parameter naming it: in the workspace that object lives in.

Elevation: in RBAC mode a permission granted on the scope of the one object a path names
stands in for the services' owner-or-admin check, as in Determined (an Editor of a workspace
changes every experiment in it). It applies only where `elevate_with` is set and the caller
holds that permission there; routes whose body names other objects (moves, bulk changes) or
that reach admin-only settings (quotas) never elevate a holder of a workspace role.
"""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.domain.rbac import Permission

P = Permission

CLUSTER = "cluster"
ANYWHERE = "anywhere"

# path parameter -> the kind of object it names (services.rbac.workspace_of)
KINDS = {
    "workspace_id": "workspace",
    "project_id": "project",
    "experiment_id": "experiment",
    "trial_id": "trial",
    "run_id": "trial",
    "task_id": "task",
    "command_id": "task",
    "notebook_id": "task",
    "tensorboard_id": "task",
    "shell_id": "task",
    "checkpoint_uuid": "checkpoint",
    "model_name": "model",
    "template_name": "template",
    "user_id": "user",
}


@dataclass(frozen=True)
class Need:
    permission: Permission
    scope: str = ANYWHERE  # CLUSTER, ANYWHERE, or a path parameter of KINDS
    elevate_with: Permission | None = None
    # ANYWHERE, narrowed to the workspace the JSON body names (its `projectId`, else its
    # `workspaceId`) when it names one: where a creation lands.
    body: bool = False
    # The permission needed where the route puts an object: the workspace of the body's
    # `destinationProjectId`/`destinationWorkspaceId` (moves), and where the services place it
    # once they have resolved it (config `workspace`/`project` names, the default workspace):
    # services.rbac.check_placement.
    lands: Permission | None = None

    @property
    def kind(self) -> str | None:
        return KINDS.get(self.scope)


def cluster(p: Permission, *, elevate: bool = True) -> Need:
    """Cluster-wide; what only an admin may do, so the permission stands in for admin."""
    return Need(p, CLUSTER, p if elevate else None)


def anywhere(p: Permission, *, elevate_with: Permission | None = None) -> Need:
    return Need(p, ANYWHERE, elevate_with)


def into(p: Permission) -> Need:
    """A creation: in the workspace its body names, and where it lands once placed."""
    return Need(p, ANYWHERE, body=True, lands=p)


def moving(param: str, p: Permission, lands: Permission) -> Need:
    """A move of the object `param` names: `p` where it is (never elevated: the services'
    owner check stands), `lands` where it goes."""
    return Need(p, param, None, lands=lands)


def on(param: str, p: Permission, *, elevate: bool = True) -> Need:
    """In the workspace of the object `param` names; elevated there unless told otherwise."""
    return Need(p, param, p if elevate else None)


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
_NSC = ("commands", "notebooks", "tensorboards", "shells")
_NSC_ID = {"commands": "command_id", "notebooks": "notebook_id",
           "tensorboards": "tensorboard_id", "shells": "shell_id"}  # fmt: skip

# Routes that need no permission but whose answer depends on what the caller holds (the job
# queue shows jobs it may not view as `limited`): RBAC reads the caller's holdings for them too.
HOLDINGS_READ_WITHOUT_NEED = frozenset({("GET", "/api/v1/job-queues-v2")})

VIEW_EXP = P.VIEW_EXPERIMENT_METADATA
VIEW_ART = P.VIEW_EXPERIMENT_ARTIFACTS

NEEDS: dict[tuple[str, str], Need | None] = {
    # no permission: the handshake, the UI's files, the agents, the proxy (own checks)
    ("GET", "/info"): None,
    ("POST", "/api/v1/auth/login"): None,
    ("WS", "/agents"): None,
    ("WS", "/proxy"): None,
    ("GET", "/det/interactive/{rest:path}"): None,
    ("GET", "/det/wait/{rest:path}"): None,
    ("GET", "/"): None,
    ("GET", "/det"): None,
    ("GET", "/det/{path:path}"): None,
    **{
        ("GET", f"/api/v1/openapi{tail}"): None
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
    # the cluster: users, master config, agents, pools
    ("POST", "/api/v1/users"): cluster(P.ADMINISTRATE_USER),
    ("POST", "/api/v1/cleanup_logs"): cluster(P.UPDATE_MASTER_CONFIG),
    ("GET", "/api/v1/master/config"): cluster(P.VIEW_MASTER_CONFIG),
    ("GET", "/api/v1/master/audit"): cluster(P.ADMINISTRATE_USER),
    ("POST", "/api/v1/agents/{agent_id:str}/enable"): cluster(P.UPDATE_AGENTS),
    ("POST", "/api/v1/agents/{agent_id:str}/disable"): cluster(P.UPDATE_AGENTS),
    **{
        (verb, _BINDINGS): cluster(P.MODIFY_RP_WORKSPACE_BINDINGS)
        for verb in ("POST", "DELETE", "PUT")
    },
    # groups and roles: managed cluster-wide only (admins, ClusterAdmin)
    ("POST", "/api/v1/groups"): cluster(P.UPDATE_GROUP),
    ("PUT", _GROUP): cluster(P.UPDATE_GROUP),
    ("DELETE", _GROUP): cluster(P.UPDATE_GROUP),
    ("PATCH", "/api/v1/users/assignments"): cluster(P.UPDATE_GROUP),
    # (a global permission: a cluster-wide WorkspaceAdmin holds ASSIGN_ROLES everywhere but
    # must not hand out ClusterAdmin)
    ("POST", "/api/v1/roles/add-assignments"): cluster(P.UPDATE_ROLES),
    ("POST", "/api/v1/roles/remove-assignments"): cluster(P.UPDATE_ROLES),
    # reading groups and roles, and one's own permissions: anyone logged in
    ("POST", "/api/v1/groups/search"): None,
    ("GET", _GROUP): None,
    ("POST", "/api/v1/roles/search"): None,
    ("POST", "/api/v1/roles/search/by-ids"): None,
    ("POST", "/api/v1/roles/search/by-assignability"): None,
    ("GET", "/api/v1/roles/search/by-user/{user_id:int}"): None,
    ("GET", "/api/v1/roles/search/by-group/{group_id:int}"): None,
    ("GET", "/api/v1/roles/workspace/{workspace_id:int}"): on("workspace_id", P.VIEW_WORKSPACE),
    ("GET", "/api/v1/permissions/summary"): None,
    # a user's own account (the services let an admin change others')
    ("POST", "/api/v1/auth/logout"): None,
    ("PATCH", "/api/v1/users/{user_id:int}"): None,
    ("POST", "/api/v1/users/{user_id:int}/password"): None,
    # reads of the cluster: anyone logged in, as in Determined
    ("GET", "/api/v1/me"): None,
    ("GET", "/api/v1/master"): None,
    ("GET", "/api/v1/users"): None,
    ("GET", "/api/v1/users/{user_id:int}"): None,
    ("GET", "/api/v1/users/{username:str}/by-username"): None,
    ("GET", "/api/v1/agents"): None,
    ("GET", "/api/v1/agents/{agent_id:str}"): None,
    ("GET", "/api/v1/resource-pools"): None,
    ("GET", "/api/v1/resource-pools/{pool_name:str}/provisioner"): None,
    ("GET", _BINDINGS): None,
    ("GET", "/api/v1/job-queues-v2"): None,
    ("GET", f"{_WS}/available-resource-pools"): on("workspace_id", P.VIEW_WORKSPACE),
    # experiments and trials
    ("GET", "/api/v1/experiments"): anywhere(VIEW_EXP),
    ("POST", "/api/v1/experiments-search"): anywhere(VIEW_EXP),
    ("GET", _EXP): on("experiment_id", VIEW_EXP),
    ("GET", f"{_EXP}/checkpoints"): on("experiment_id", VIEW_ART),
    ("GET", f"{_EXP}/checkpoint_gc"): on("experiment_id", VIEW_ART),
    ("GET", f"{_EXP}/preview_gc"): on("experiment_id", VIEW_ART),
    ("GET", "/experiments/{experiment_id:int}/preview_gc"): on("experiment_id", VIEW_ART),
    ("GET", f"{_EXP}/model_def"): on("experiment_id", VIEW_ART),
    ("GET", f"{_EXP}/searcher/best_searcher_validation_metric"): on("experiment_id", VIEW_EXP),
    ("GET", f"{_EXP}/trials"): on("experiment_id", VIEW_EXP),
    ("GET", _TRIAL): on("trial_id", VIEW_EXP),
    ("GET", f"{_TRIAL}/checkpoints"): on("trial_id", VIEW_ART),
    ("GET", f"{_TRIAL}/logs"): on("trial_id", VIEW_EXP),
    ("GET", f"{_TRIAL}/workloads"): on("trial_id", VIEW_EXP),
    ("GET", "/api/v1/trials/metrics/trial_metrics"): anywhere(VIEW_EXP),
    ("GET", "/api/v1/trials/metrics/training_metrics"): anywhere(VIEW_EXP),
    ("GET", "/api/v1/trials/metrics/validation_metrics"): anywhere(VIEW_EXP),
    ("GET", "/api/v1/trials/time-series"): anywhere(VIEW_EXP),
    ("GET", "/api/v1/checkpoints/{checkpoint_uuid:str}"): on("checkpoint_uuid", VIEW_ART),
    ("POST", "/api/v1/experiments"): into(P.CREATE_EXPERIMENT),
    # continued in its own project: creating experiments there is what it takes
    ("POST", "/api/v1/experiments/continue"): Need(
        P.CREATE_EXPERIMENT, ANYWHERE, lands=P.CREATE_EXPERIMENT
    ),
    ("PATCH", _EXP): on("experiment_id", P.UPDATE_EXPERIMENT_METADATA),
    **{
        ("POST", f"{_EXP}/{verb}"): on("experiment_id", P.UPDATE_EXPERIMENT)
        for verb in ("activate", "cancel", "kill", "pause")
    },
    **{
        ("POST", f"{_EXP}/{verb}"): on("experiment_id", P.UPDATE_EXPERIMENT_METADATA)
        for verb in ("archive", "unarchive")
    },
    ("POST", f"{_TRIAL}/kill"): on("trial_id", P.UPDATE_EXPERIMENT),
    ("POST", f"{_EXP}/checkpoint_gc"): on("experiment_id", P.UPDATE_EXPERIMENT),
    ("DELETE", "/api/v1/checkpoints"): anywhere(P.DELETE_EXPERIMENT),
    ("POST", "/api/v1/checkpoints/rm"): anywhere(P.DELETE_EXPERIMENT),
    ("PUT", "/api/v1/checkpoints/{checkpoint_uuid:str}/protection"): on(
        "checkpoint_uuid", P.UPDATE_EXPERIMENT
    ),
    **{
        ("POST", f"/api/v1/experiments/{verb}"): anywhere(P.UPDATE_EXPERIMENT)
        for verb in ("activate", "archive", "cancel", "kill", "pause", "unarchive")
    },
    ("POST", "/api/v1/experiments/move"): Need(
        P.UPDATE_EXPERIMENT, ANYWHERE, lands=P.CREATE_EXPERIMENT
    ),
    ("POST", f"{_EXP}/move"): moving("experiment_id", P.UPDATE_EXPERIMENT, P.CREATE_EXPERIMENT),
    ("POST", "/api/v1/job-queues"): anywhere(P.UPDATE_EXPERIMENT),
    # notebooks, shells, commands, TensorBoards
    ("GET", "/api/v1/tasks"): anywhere(P.VIEW_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}"): on("task_id", P.VIEW_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}/acceleratorData"): on("task_id", P.VIEW_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}/context_directory"): on("task_id", P.VIEW_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}/logs"): on("task_id", P.VIEW_NSC),
    **{("GET", f"/api/v1/{kind}"): anywhere(P.VIEW_NSC) for kind in _NSC},
    **{("POST", f"/api/v1/{kind}"): into(P.CREATE_NSC) for kind in _NSC},
    **{
        ("GET", f"/api/v1/{kind}/{{{_NSC_ID[kind]}:str}}"): on(_NSC_ID[kind], P.VIEW_NSC)
        for kind in _NSC
    },
    **{
        ("POST", f"/api/v1/{kind}/{{{_NSC_ID[kind]}:str}}/{verb}"): on(_NSC_ID[kind], P.UPDATE_NSC)
        for kind in _NSC
        for verb in ("kill", "set_priority")
    },
    # templates
    ("GET", "/api/v1/templates"): anywhere(P.VIEW_TEMPLATES),
    ("GET", _TPL): on("template_name", P.VIEW_TEMPLATES),
    ("POST", _TPL): into(P.CREATE_TEMPLATES),
    ("PATCH", _TPL): on("template_name", P.UPDATE_TEMPLATES),
    ("DELETE", _TPL): on("template_name", P.DELETE_TEMPLATES),
    # workspaces and projects
    ("GET", "/api/v1/workspaces"): anywhere(P.VIEW_WORKSPACE),
    ("GET", _WS): on("workspace_id", P.VIEW_WORKSPACE),
    ("GET", f"{_WS}/projects"): on("workspace_id", P.VIEW_PROJECT),
    ("GET", _PROJECT): on("project_id", P.VIEW_PROJECT),
    ("GET", f"{_PROJECT}/columns"): on("project_id", P.VIEW_PROJECT),
    # Creating a workspace and changing one may set slot quotas: only a cluster-wide holder of
    # SET_RESOURCE_QUOTAS (ClusterAdmin) stands in for an admin there.
    ("POST", "/api/v1/workspaces"): Need(P.CREATE_WORKSPACE, CLUSTER, P.SET_RESOURCE_QUOTAS),
    ("PATCH", _WS): Need(P.UPDATE_WORKSPACE, "workspace_id", P.SET_RESOURCE_QUOTAS),
    ("DELETE", _WS): on("workspace_id", P.DELETE_WORKSPACE),
    ("POST", f"{_WS}/archive"): on("workspace_id", P.UPDATE_WORKSPACE),
    ("POST", f"{_WS}/unarchive"): on("workspace_id", P.UPDATE_WORKSPACE),
    ("POST", f"{_WS}/projects"): on("workspace_id", P.CREATE_PROJECT),
    ("PATCH", _PROJECT): on("project_id", P.UPDATE_PROJECT),
    ("DELETE", _PROJECT): on("project_id", P.DELETE_PROJECT),
    ("POST", f"{_PROJECT}/archive"): on("project_id", P.UPDATE_PROJECT),
    ("POST", f"{_PROJECT}/unarchive"): on("project_id", P.UPDATE_PROJECT),
    ("POST", f"{_PROJECT}/move"): moving("project_id", P.UPDATE_PROJECT, P.CREATE_PROJECT),
    # the model registry: deleting another user's model or version takes its own permission
    ("GET", "/api/v1/models"): anywhere(P.VIEW_MODEL_REGISTRY),
    ("GET", "/api/v1/model/labels"): anywhere(P.VIEW_MODEL_REGISTRY),
    ("GET", _MODEL): on("model_name", P.VIEW_MODEL_REGISTRY),
    ("GET", f"{_MODEL}/versions"): on("model_name", P.VIEW_MODEL_REGISTRY),
    ("GET", _MODEL_VERSION): on("model_name", P.VIEW_MODEL_REGISTRY),
    ("POST", "/api/v1/models"): into(P.CREATE_MODEL_REGISTRY),
    # (a patch naming a workspace moves the model there)
    ("PATCH", _MODEL): Need(
        P.EDIT_MODEL_REGISTRY, "model_name", P.EDIT_MODEL_REGISTRY, lands=P.CREATE_MODEL_REGISTRY
    ),
    ("DELETE", _MODEL): Need(
        P.DELETE_MODEL_REGISTRY, "model_name", P.DELETE_OTHER_USER_MODEL_REGISTRY
    ),
    ("POST", f"{_MODEL}/archive"): on("model_name", P.EDIT_MODEL_REGISTRY),
    ("POST", f"{_MODEL}/unarchive"): on("model_name", P.EDIT_MODEL_REGISTRY),
    ("POST", f"{_MODEL}/move"): moving(
        "model_name", P.EDIT_MODEL_REGISTRY, P.CREATE_MODEL_REGISTRY
    ),
    ("POST", f"{_MODEL}/versions"): on("model_name", P.EDIT_MODEL_REGISTRY, elevate=False),
    ("PATCH", _MODEL_VERSION): on("model_name", P.EDIT_MODEL_REGISTRY),
    ("DELETE", _MODEL_VERSION): Need(
        P.DELETE_MODEL_VERSION, "model_name", P.DELETE_OTHER_USER_MODEL_VERSION
    ),
    # what a running task reports or asks about itself: its token's own rules
    ("POST", f"{_TRIAL}/metrics"): None,
    ("POST", f"{_TRIAL}/metrics/batch"): None,
    ("POST", f"{_TRIAL}/progress"): None,
    ("POST", f"{_TRIAL}/runner/metadata"): None,
    ("POST", f"{_TRIAL}/early_exit"): None,
    ("POST", "/api/v1/runs/start"): None,
    ("GET", "/api/v1/runs/{run_id:int}/metadata"): None,
    ("POST", "/api/v1/runs/{run_id:int}/metadata"): None,
    ("POST", "/api/v1/webhooks/custom"): None,
    ("POST", "/api/v1/checkpoints"): None,
    ("PATCH", "/api/v1/checkpoints"): None,
    ("POST", "/api/v1/task/logs"): None,
    ("GET", f"{_ALLOC}/signals/preemption"): None,
    ("POST", f"{_ALLOC}/signals/ack_preemption"): None,
    ("POST", f"{_ALLOC}/acceleratorData"): None,
    ("POST", f"{_ALLOC}/proxy_address"): None,
    ("POST", f"{_ALLOC}/ready"): None,
    ("GET", f"{_ALLOC}/resources/{{resources_id:str}}/rendezvous"): None,
}
