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
    ("GET", "/health"): None,
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
    ("GET", "/api/v1/master/logs"): cluster(P.VIEW_MASTER_LOGS),
    ("PUT", "/api/v1/config-policies/global/{workload_type:str}"): cluster(P.UPDATE_MASTER_CONFIG),
    ("DELETE", "/api/v1/config-policies/global/{workload_type:str}"): cluster(
        P.UPDATE_MASTER_CONFIG
    ),
    # admins only, as the global ones (the service checks): a workspace role grants nothing here
    ("PUT", "/api/v1/config-policies/workspaces/{workspace_id:int}/{workload_type:str}"): cluster(
        P.UPDATE_MASTER_CONFIG
    ),
    (
        "DELETE",
        "/api/v1/config-policies/workspaces/{workspace_id:int}/{workload_type:str}",
    ): cluster(P.UPDATE_MASTER_CONFIG),
    ("GET", "/api/v1/config-policies/global/{workload_type:str}"): None,
    ("GET", "/api/v1/config-policies/workspaces/{workspace_id:int}/{workload_type:str}"): on(
        "workspace_id", P.VIEW_WORKSPACE
    ),
    ("POST", "/api/v1/agents/{agent_id:str}/slots/{slot_id:str}/enable"): cluster(P.UPDATE_AGENTS),
    ("POST", "/api/v1/agents/{agent_id:str}/slots/{slot_id:str}/disable"): cluster(P.UPDATE_AGENTS),
    ("GET", "/api/v1/agents/{agent_id:str}/slots"): None,
    ("GET", "/api/v1/agents/{agent_id:str}/slots/{slot_id:str}"): None,
    ("PATCH", "/api/v1/users"): cluster(P.ADMINISTRATE_USER),
    ("PATCH", "/api/v1/master/config"): cluster(P.UPDATE_MASTER_CONFIG),
    ("POST", "/api/v1/namespace-bindings/bulk-auto-create"): cluster(P.UPDATE_MASTER_CONFIG),
    ("POST", f"{_WS}/namespace-bindings"): cluster(P.UPDATE_MASTER_CONFIG),
    ("DELETE", f"{_WS}/namespace-bindings"): cluster(P.UPDATE_MASTER_CONFIG),
    ("POST", f"{_WS}/set-resource-quota"): cluster(P.UPDATE_MASTER_CONFIG),
    ("GET", "/api/v1/k8s-resource-managers"): None,
    ("GET", "/api/v1/namespace-bindings/workspace-ids-with-default-bindings"): None,
    ("GET", f"{_WS}/list-namespace-bindings"): on("workspace_id", P.VIEW_WORKSPACE),
    ("GET", f"{_WS}/get-k8s-resource-quotas"): on("workspace_id", P.VIEW_WORKSPACE),
    ("GET", "/api/v1/master/cluster_message"): cluster(P.UPDATE_MASTER_CONFIG),
    ("PUT", "/api/v1/master/cluster_message"): cluster(P.UPDATE_MASTER_CONFIG),
    ("DELETE", "/api/v1/master/cluster_message"): cluster(P.UPDATE_MASTER_CONFIG),
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
    ("GET", "/api/v1/users/setting"): None,
    ("POST", "/api/v1/users/setting"): None,
    ("POST", "/api/v1/users/setting/reset"): None,
    ("POST", "/api/v1/users/activity"): None,  # the list it feeds shows only visible projects
    ("GET", "/api/v1/user/projects/activity"): None,
    ("POST", f"{_WS}/pin"): on("workspace_id", P.VIEW_WORKSPACE),
    ("POST", f"{_WS}/unpin"): None,
    ("POST", "/api/v1/tokens"): None,
    ("GET", "/api/v1/tokens"): None,
    ("PATCH", "/api/v1/tokens/{token_id:int}"): None,
    ("PATCH", "/api/v1/users/{user_id:int}"): None,
    ("POST", "/api/v1/users/{user_id:int}/password"): None,
    # reads of the cluster: anyone logged in, as in Determined
    ("GET", "/api/v1/me"): None,
    ("GET", "/api/v1/auth/user"): None,
    ("GET", "/api/v1/master/telemetry"): None,
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
    ("GET", "/api/v1/job-queues"): None,
    ("GET", "/api/v1/job-queues/stats"): None,
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
    # the route checks the trial's workspace itself (api/unmanaged.py)
    (
        "GET",
        "/api/v1/trials/by-external-id/{external_experiment_id:str}/{external_trial_id:str}",
    ): anywhere(VIEW_EXP),
    ("GET", f"{_TRIAL}/checkpoints"): on("trial_id", VIEW_ART),
    ("GET", f"{_TRIAL}/logs"): on("trial_id", VIEW_EXP),
    ("GET", f"{_TRIAL}/logs/fields"): on("trial_id", VIEW_EXP),
    ("GET", f"{_TRIAL}/workloads"): on("trial_id", VIEW_EXP),
    ("GET", f"{_TRIAL}/profiler/available_series"): on("trial_id", VIEW_EXP),
    ("GET", f"{_TRIAL}/profiler/metrics"): on("trial_id", VIEW_EXP),
    # what work cost: an experiment's and a trial's where they live; the cluster's usage
    # (every user's, every workspace's) cluster-wide, as Determined's CanGetUsageDetails
    ("GET", f"{_EXP}/cost"): on("experiment_id", VIEW_EXP),
    ("GET", f"{_TRIAL}/cost"): on("trial_id", VIEW_EXP),
    **{
        ("GET", path): cluster(P.VIEW_CLUSTER_USAGE, elevate=False)
        for path in (
            "/api/v1/resources/cost",
            "/api/v1/resources/allocation/aggregated",
            "/api/v1/resources/allocation/raw",
            "/resources/allocation/aggregated",
            "/resources/allocation/raw",
            "/resources/allocation/allocations-csv",
        )
    },
    ("GET", "/api/v1/trials/metrics/trial_metrics"): anywhere(VIEW_EXP),
    ("GET", "/api/v1/trials/metrics/training_metrics"): anywhere(VIEW_EXP),
    ("GET", "/api/v1/trials/metrics/validation_metrics"): anywhere(VIEW_EXP),
    ("GET", "/api/v1/trials/time-series"): anywhere(VIEW_EXP),
    ("GET", "/api/v1/checkpoints/{checkpoint_uuid:str}"): on("checkpoint_uuid", VIEW_ART),
    # experiment data reads (api/experiment_files.py, api/project_metric_ranges.py), as
    # Determined's CanGetExperimentArtifacts and CanGetProject
    ("GET", f"{_EXP}/file_tree"): on("experiment_id", VIEW_ART),
    ("POST", f"{_EXP}/file"): on("experiment_id", VIEW_ART),
    ("GET", f"{_EXP}/validation-history"): on("experiment_id", VIEW_ART),
    # the labels in use, of the experiments the caller may view (api/experiment_labels.py)
    ("GET", "/api/v1/experiment/labels"): anywhere(VIEW_EXP),
    ("GET", f"{_PROJECT}/experiments/metric-ranges"): on("project_id", P.VIEW_PROJECT),
    ("POST", "/api/v1/preview-hp-search"): None,  # reads nothing stored
    # trial source infos (api/trial_sources.py): the metrics of trials that used a checkpoint
    # or a model version, filtered to the trials the caller may view
    ("GET", "/api/v1/checkpoints/{checkpoint_uuid:str}/metrics"): on("checkpoint_uuid", VIEW_ART),
    ("GET", f"{_MODEL_VERSION}/metrics"): on("model_name", P.VIEW_MODEL_REGISTRY),
    # the metric streams (api/metric_streams.py): each experiment the ids name is checked
    ("GET", "/api/v1/experiments/metrics-stream/metric-names"): anywhere(VIEW_ART),
    **{
        ("GET", f"{_EXP}/metrics-stream/{kind}"): on("experiment_id", VIEW_ART)
        for kind in ("batches", "trials-snapshot", "trials-sample")
    },
    ("POST", "/api/v1/checkpoints/{checkpoint_uuid:str}/metadata"): on(
        "checkpoint_uuid", P.UPDATE_EXPERIMENT_METADATA
    ),
    ("POST", "/api/v1/experiments"): into(P.CREATE_EXPERIMENT),
    # detached runs (api/unmanaged.py): the services check the experiment's owner
    ("PUT", "/api/v1/experiments/by-external-id/{external_experiment_id:str}"): into(
        P.CREATE_EXPERIMENT
    ),
    ("POST", "/api/v1/trials"): anywhere(P.UPDATE_EXPERIMENT),
    ("PUT", "/api/v1/trials"): anywhere(P.UPDATE_EXPERIMENT),
    # continued in its own project: creating experiments there is what it takes
    ("POST", "/api/v1/experiments/continue"): Need(
        P.CREATE_EXPERIMENT, ANYWHERE, lands=P.CREATE_EXPERIMENT
    ),
    ("PATCH", _EXP): on("experiment_id", P.UPDATE_EXPERIMENT_METADATA),
    ("PUT", f"{_EXP}/labels/{{label:path}}"): on("experiment_id", P.UPDATE_EXPERIMENT_METADATA),
    ("DELETE", f"{_EXP}/labels/{{label:path}}"): on("experiment_id", P.UPDATE_EXPERIMENT_METADATA),
    # deletions (api/experiment_deletion.py), as Determined's CanDeleteExperiment
    ("DELETE", _EXP): on("experiment_id", P.DELETE_EXPERIMENT),
    ("DELETE", f"{_EXP}/tensorboard-files"): on("experiment_id", P.DELETE_EXPERIMENT),
    ("DELETE", f"{_PROJECT}/experiments/delete"): on("project_id", P.DELETE_EXPERIMENT),
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
    **{
        ("POST", f"{_PROJECT}/experiments/{verb}"): on("project_id", P.UPDATE_EXPERIMENT)
        for verb in ("activate", "archive", "cancel", "kill", "pause", "unarchive")
    },
    ("PUT", f"{_PROJECT}/experiments/retain_logs"): on("project_id", P.UPDATE_EXPERIMENT),
    ("POST", f"{_PROJECT}/notes"): on("project_id", P.UPDATE_PROJECT),
    ("PUT", f"{_PROJECT}/notes"): on("project_id", P.UPDATE_PROJECT),
    ("GET", "/api/v1/projects/key/{key:str}"): None,  # filtered below: visible projects only
    ("GET", f"{_PROJECT}/metadata/{{key:str}}"): on("project_id", VIEW_EXP),
    ("PUT", f"{_EXP}/retain_logs"): on("experiment_id", P.UPDATE_EXPERIMENT),
    ("PUT", f"{_TRIAL}/retain_logs"): on("trial_id", P.UPDATE_EXPERIMENT),
    ("GET", f"{_TRIAL}/remaining_log_retention_days"): on("trial_id", VIEW_EXP),
    ("POST", "/api/v1/runs"): anywhere(VIEW_EXP),
    **{
        ("POST", f"/api/v1/runs/{verb}"): anywhere(P.UPDATE_EXPERIMENT)
        for verb in ("kill", "pause", "resume", "archive", "unarchive")
    },
    ("POST", "/api/v1/runs/delete"): anywhere(P.DELETE_EXPERIMENT),
    ("POST", "/api/v1/runs/move"): Need(P.UPDATE_EXPERIMENT, ANYWHERE, lands=P.CREATE_EXPERIMENT),
    ("POST", f"{_PROJECT}/experiments/move"): Need(
        P.UPDATE_EXPERIMENT, "project_id", lands=P.CREATE_EXPERIMENT
    ),
    ("POST", "/api/v1/job-queues"): anywhere(P.UPDATE_EXPERIMENT),
    # notebooks, shells, commands, TensorBoards
    ("GET", "/api/v1/tasks"): anywhere(P.VIEW_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}"): on("task_id", P.VIEW_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}/acceleratorData"): on("task_id", P.VIEW_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}/context_directory"): on("task_id", P.VIEW_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}/logs"): on("task_id", P.VIEW_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}/logs/fields"): on("task_id", P.VIEW_NSC),
    # generic tasks (api/generic_tasks.py)
    ("POST", "/api/v1/generic-tasks"): into(P.CREATE_NSC),
    ("GET", "/api/v1/tasks/{task_id:str}/config"): on("task_id", P.VIEW_NSC),
    **{
        ("POST", f"/api/v1/tasks/{{task_id:str}}/{verb}"): on("task_id", P.UPDATE_NSC)
        for verb in ("kill", "pause", "unpause")
    },
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
    # create or replace: where it lands, and the owner-or-admin check of the service
    ("PUT", _TPL): into(P.CREATE_TEMPLATES),
    ("PATCH", "/api/v1/template/rename"): anywhere(P.UPDATE_TEMPLATES),
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
    # webhooks: the services check the workspace (owner, or EDIT_WEBHOOKS / VIEW_WEBHOOKS
    # there under RBAC) and keep global webhooks to admins
    ("GET", "/api/v1/webhooks"): None,
    ("POST", "/api/v1/webhooks"): None,
    ("PATCH", "/api/v1/webhooks/{webhook_id:int}"): None,
    ("DELETE", "/api/v1/webhooks/{webhook_id:int}"): None,
    ("POST", "/api/v1/webhooks/{webhook_id:int}/test"): None,
    # what a running task reports or asks about itself: its token's own rules
    ("POST", f"{_TRIAL}/metrics"): None,
    ("POST", f"{_TRIAL}/training_metrics"): None,
    ("POST", f"{_TRIAL}/validation_metrics"): None,
    ("POST", f"{_TRIAL}/metrics/batch"): None,
    ("POST", f"{_TRIAL}/progress"): None,
    ("POST", f"{_TRIAL}/runner/metadata"): None,
    ("POST", f"{_TRIAL}/early_exit"): None,
    ("POST", "/api/v1/runs/start"): None,
    ("GET", "/api/v1/runs/{run_id:int}/metadata"): None,
    ("POST", "/api/v1/runs/{run_id:int}/metadata"): None,
    ("POST", "/api/v1/webhooks/custom"): None,
    ("POST", "/api/v1/trial-source-info"): None,  # a report: the trial's own checks
    ("POST", "/api/v1/checkpoints"): None,
    ("PATCH", "/api/v1/checkpoints"): None,
    ("POST", "/api/v1/task/logs"): None,
    ("POST", "/task-logs"): None,
    ("POST", f"{_TRIAL}/start"): None,
    ("PATCH", _TRIAL): None,
    ("GET", f"{_ALLOC}/signals/preemption"): None,
    ("GET", _ALLOC): None,
    ("PUT", "/api/v1/notebooks/{notebook_id:str}/report_idle"): None,
    ("POST", f"{_ALLOC}/signals/pending_preemption"): None,
    ("POST", f"{_ALLOC}/all_gather"): None,
    ("POST", f"{_ALLOC}/notify_container_running"): None,
    ("POST", f"{_ALLOC}/signals/ack_preemption"): None,
    ("POST", f"{_ALLOC}/acceleratorData"): None,
    ("POST", f"{_ALLOC}/proxy_address"): None,
    ("POST", f"{_ALLOC}/ready"): None,
    ("GET", f"{_ALLOC}/resources/{{resources_id:str}}/rendezvous"): None,
}
