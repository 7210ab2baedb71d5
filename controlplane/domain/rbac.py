"""Roles, their permissions, and the decision whether assignments grant a permission somewhere.

Pure: the one policy table of Determined's RBAC (Enterprise Edition, open here). Permissions
carry Determined's wire names (`PERMISSION_TYPE_…`); roles carry Determined's ids and names.
A role is assigned to a user or a group, cluster-wide or on one workspace; a user holds what
its own assignments and its groups' assignments grant (`effective`).

Global permissions (Determined numbers them 9xxxx) concern the whole cluster: only a
cluster-wide assignment grants them, and a role holding one can only be assigned cluster-wide
(its scope mask says so, as Determined's does).

`decide` answers for one permission in one scope; `controlplane.api.route_permissions` names
the permission and the scope of every route, and the API applies both when
`security.authz.type` is `rbac`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from controlplane.domain.access import ALLOW, Decision


class Permission(StrEnum):
    """Determined 0.38.1's `v1PermissionType` (bindings.py), minus UNSPECIFIED."""

    ADMINISTRATE_USER = "PERMISSION_TYPE_ADMINISTRATE_USER"
    ADMINISTRATE_OAUTH = "PERMISSION_TYPE_ADMINISTRATE_OAUTH"
    CREATE_EXPERIMENT = "PERMISSION_TYPE_CREATE_EXPERIMENT"
    VIEW_EXPERIMENT_ARTIFACTS = "PERMISSION_TYPE_VIEW_EXPERIMENT_ARTIFACTS"
    VIEW_EXPERIMENT_METADATA = "PERMISSION_TYPE_VIEW_EXPERIMENT_METADATA"
    UPDATE_EXPERIMENT = "PERMISSION_TYPE_UPDATE_EXPERIMENT"
    UPDATE_EXPERIMENT_METADATA = "PERMISSION_TYPE_UPDATE_EXPERIMENT_METADATA"
    DELETE_EXPERIMENT = "PERMISSION_TYPE_DELETE_EXPERIMENT"
    CREATE_NSC = "PERMISSION_TYPE_CREATE_NSC"
    VIEW_NSC = "PERMISSION_TYPE_VIEW_NSC"
    UPDATE_NSC = "PERMISSION_TYPE_UPDATE_NSC"
    UPDATE_GROUP = "PERMISSION_TYPE_UPDATE_GROUP"
    CREATE_WORKSPACE = "PERMISSION_TYPE_CREATE_WORKSPACE"
    VIEW_WORKSPACE = "PERMISSION_TYPE_VIEW_WORKSPACE"
    UPDATE_WORKSPACE = "PERMISSION_TYPE_UPDATE_WORKSPACE"
    DELETE_WORKSPACE = "PERMISSION_TYPE_DELETE_WORKSPACE"
    SET_WORKSPACE_AGENT_USER_GROUP = "PERMISSION_TYPE_SET_WORKSPACE_AGENT_USER_GROUP"
    SET_WORKSPACE_CHECKPOINT_STORAGE_CONFIG = (
        "PERMISSION_TYPE_SET_WORKSPACE_CHECKPOINT_STORAGE_CONFIG"
    )
    SET_WORKSPACE_DEFAULT_RESOURCE_POOL = "PERMISSION_TYPE_SET_WORKSPACE_DEFAULT_RESOURCE_POOL"
    CREATE_PROJECT = "PERMISSION_TYPE_CREATE_PROJECT"
    VIEW_PROJECT = "PERMISSION_TYPE_VIEW_PROJECT"
    UPDATE_PROJECT = "PERMISSION_TYPE_UPDATE_PROJECT"
    DELETE_PROJECT = "PERMISSION_TYPE_DELETE_PROJECT"
    ASSIGN_ROLES = "PERMISSION_TYPE_ASSIGN_ROLES"
    VIEW_MODEL_REGISTRY = "PERMISSION_TYPE_VIEW_MODEL_REGISTRY"
    EDIT_MODEL_REGISTRY = "PERMISSION_TYPE_EDIT_MODEL_REGISTRY"
    CREATE_MODEL_REGISTRY = "PERMISSION_TYPE_CREATE_MODEL_REGISTRY"
    DELETE_MODEL_REGISTRY = "PERMISSION_TYPE_DELETE_MODEL_REGISTRY"
    DELETE_MODEL_VERSION = "PERMISSION_TYPE_DELETE_MODEL_VERSION"
    DELETE_OTHER_USER_MODEL_REGISTRY = "PERMISSION_TYPE_DELETE_OTHER_USER_MODEL_REGISTRY"
    DELETE_OTHER_USER_MODEL_VERSION = "PERMISSION_TYPE_DELETE_OTHER_USER_MODEL_VERSION"
    VIEW_MASTER_LOGS = "PERMISSION_TYPE_VIEW_MASTER_LOGS"
    VIEW_CLUSTER_USAGE = "PERMISSION_TYPE_VIEW_CLUSTER_USAGE"
    UPDATE_AGENTS = "PERMISSION_TYPE_UPDATE_AGENTS"
    VIEW_SENSITIVE_AGENT_INFO = "PERMISSION_TYPE_VIEW_SENSITIVE_AGENT_INFO"
    VIEW_MASTER_CONFIG = "PERMISSION_TYPE_VIEW_MASTER_CONFIG"
    UPDATE_MASTER_CONFIG = "PERMISSION_TYPE_UPDATE_MASTER_CONFIG"
    VIEW_EXTERNAL_JOBS = "PERMISSION_TYPE_VIEW_EXTERNAL_JOBS"
    CONTROL_STRICT_JOB_QUEUE = "PERMISSION_TYPE_CONTROL_STRICT_JOB_QUEUE"
    VIEW_TEMPLATES = "PERMISSION_TYPE_VIEW_TEMPLATES"
    UPDATE_TEMPLATES = "PERMISSION_TYPE_UPDATE_TEMPLATES"
    CREATE_TEMPLATES = "PERMISSION_TYPE_CREATE_TEMPLATES"
    DELETE_TEMPLATES = "PERMISSION_TYPE_DELETE_TEMPLATES"
    UPDATE_ROLES = "PERMISSION_TYPE_UPDATE_ROLES"
    EDIT_WEBHOOKS = "PERMISSION_TYPE_EDIT_WEBHOOKS"
    VIEW_WEBHOOKS = "PERMISSION_TYPE_VIEW_WEBHOOKS"
    MODIFY_RP_WORKSPACE_BINDINGS = "PERMISSION_TYPE_MODIFY_RP_WORKSPACE_BINDINGS"
    SET_WORKSPACE_NAMESPACE_BINDINGS = "PERMISSION_TYPE_SET_WORKSPACE_NAMESPACE_BINDINGS"
    SET_RESOURCE_QUOTAS = "PERMISSION_TYPE_SET_RESOURCE_QUOTAS"
    VIEW_RESOURCE_QUOTAS = "PERMISSION_TYPE_VIEW_RESOURCE_QUOTAS"
    MODIFY_GLOBAL_CONFIG_POLICIES = "PERMISSION_TYPE_MODIFY_GLOBAL_CONFIG_POLICIES"
    MODIFY_WORKSPACE_CONFIG_POLICIES = "PERMISSION_TYPE_MODIFY_WORKSPACE_CONFIG_POLICIES"
    VIEW_GLOBAL_CONFIG_POLICIES = "PERMISSION_TYPE_VIEW_GLOBAL_CONFIG_POLICIES"
    VIEW_WORKSPACE_CONFIG_POLICIES = "PERMISSION_TYPE_VIEW_WORKSPACE_CONFIG_POLICIES"
    ADMINISTRATE_TOKEN = "PERMISSION_TYPE_ADMINISTRATE_TOKEN"
    UPDATE_TOKEN = "PERMISSION_TYPE_UPDATE_TOKEN"
    CREATE_TOKEN = "PERMISSION_TYPE_CREATE_TOKEN"
    CREATE_OTHER_TOKEN = "PERMISSION_TYPE_CREATE_OTHER_TOKEN"
    VIEW_OTHER_TOKEN = "PERMISSION_TYPE_VIEW_OTHER_TOKEN"
    VIEW_TOKEN = "PERMISSION_TYPE_VIEW_TOKEN"

    @property
    def label(self) -> str:
        """Determined's lower-case permission name, e.g. 'create experiment'."""
        return self.value.removeprefix("PERMISSION_TYPE_").replace("_", " ").lower()


P = Permission

# What concerns the cluster as a whole: granted only by a cluster-wide assignment.
GLOBAL: frozenset[Permission] = frozenset(
    {
        P.ADMINISTRATE_USER,
        P.ADMINISTRATE_OAUTH,
        P.UPDATE_GROUP,
        P.CREATE_WORKSPACE,
        P.VIEW_MASTER_LOGS,
        P.VIEW_CLUSTER_USAGE,
        P.UPDATE_AGENTS,
        P.VIEW_SENSITIVE_AGENT_INFO,
        P.VIEW_MASTER_CONFIG,
        P.UPDATE_MASTER_CONFIG,
        P.VIEW_EXTERNAL_JOBS,
        P.CONTROL_STRICT_JOB_QUEUE,
        P.UPDATE_ROLES,
        P.EDIT_WEBHOOKS,
        P.VIEW_WEBHOOKS,
        P.MODIFY_RP_WORKSPACE_BINDINGS,
        P.SET_WORKSPACE_NAMESPACE_BINDINGS,
        P.SET_RESOURCE_QUOTAS,
        P.MODIFY_GLOBAL_CONFIG_POLICIES,
        P.VIEW_GLOBAL_CONFIG_POLICIES,
        P.ADMINISTRATE_TOKEN,
        P.UPDATE_TOKEN,
        P.CREATE_TOKEN,
        P.CREATE_OTHER_TOKEN,
        P.VIEW_OTHER_TOKEN,
        P.VIEW_TOKEN,
    }
)

# Each role below holds everything of the one before it (Determined's docs: "supersedes").
_VIEWER = frozenset(
    {
        P.VIEW_EXPERIMENT_ARTIFACTS,
        P.VIEW_EXPERIMENT_METADATA,
        P.VIEW_WORKSPACE,
        P.VIEW_PROJECT,
        P.VIEW_NSC,
        P.VIEW_MODEL_REGISTRY,
        P.VIEW_TEMPLATES,
        P.VIEW_WORKSPACE_CONFIG_POLICIES,
    }
)
# EditorRestricted is Editor without creating or updating notebooks, shells and commands.
_EDITOR_RESTRICTED = _VIEWER | {
    P.CREATE_EXPERIMENT,
    P.UPDATE_EXPERIMENT,
    P.UPDATE_EXPERIMENT_METADATA,
    P.DELETE_EXPERIMENT,
    P.CREATE_PROJECT,
    P.UPDATE_PROJECT,
    P.DELETE_PROJECT,
    P.CREATE_MODEL_REGISTRY,
    P.EDIT_MODEL_REGISTRY,
    P.DELETE_MODEL_REGISTRY,
    P.DELETE_MODEL_VERSION,
    P.CREATE_TEMPLATES,
    P.UPDATE_TEMPLATES,
    P.DELETE_TEMPLATES,
}
_EDITOR = _EDITOR_RESTRICTED | {P.CREATE_NSC, P.UPDATE_NSC}
_WORKSPACE_ADMIN = _EDITOR | {
    P.UPDATE_WORKSPACE,
    P.DELETE_WORKSPACE,
    P.SET_WORKSPACE_AGENT_USER_GROUP,
    P.SET_WORKSPACE_CHECKPOINT_STORAGE_CONFIG,
    P.SET_WORKSPACE_DEFAULT_RESOURCE_POOL,
    P.ASSIGN_ROLES,
    P.DELETE_OTHER_USER_MODEL_REGISTRY,
    P.DELETE_OTHER_USER_MODEL_VERSION,
    P.MODIFY_WORKSPACE_CONFIG_POLICIES,
    P.VIEW_RESOURCE_QUOTAS,
}


@dataclass(frozen=True)
class Role:
    id: int
    name: str
    permissions: frozenset[Permission]

    @property
    def cluster_only(self) -> bool:
        """A role holding a global permission is assigned only cluster-wide."""
        return bool(self.permissions & GLOBAL)


# Determined's role ids (its RBAC migrations): 6 is ModelRegistryViewer, not offered here.
CLUSTER_ADMIN = Role(1, "ClusterAdmin", frozenset(Permission))
WORKSPACE_ADMIN = Role(2, "WorkspaceAdmin", _WORKSPACE_ADMIN)
WORKSPACE_CREATOR = Role(3, "WorkspaceCreator", frozenset({P.CREATE_WORKSPACE}))
VIEWER = Role(4, "Viewer", _VIEWER)
EDITOR = Role(5, "Editor", _EDITOR)
EDITOR_RESTRICTED = Role(7, "EditorRestricted", _EDITOR_RESTRICTED)

ROLES: Mapping[int, Role] = {
    r.id: r
    for r in (CLUSTER_ADMIN, WORKSPACE_ADMIN, WORKSPACE_CREATOR, VIEWER, EDITOR, EDITOR_RESTRICTED)
}


@dataclass(frozen=True)
class Assignment:
    """A role held cluster-wide (`workspace_id` None) or on one workspace."""

    role_id: int
    workspace_id: int | None = None


class Anywhere:
    """The scope of a route that names no one workspace (a list, a body naming objects): the
    permission is needed in at least one scope; what is listed or named is checked after."""

    def __repr__(self) -> str:
        return "ANYWHERE"


ANYWHERE = Anywhere()
CLUSTER = None  # the scope "the whole cluster": only cluster-wide assignments grant there

# A workspace id, the whole cluster (None), or anywhere.
Scope = int | None | Anywhere


def effective(
    own: Iterable[Assignment],
    groups_of_user: Iterable[int],
    by_group: Mapping[int, Iterable[Assignment]],
) -> tuple[Assignment, ...]:
    """What a user holds: its own assignments and those of every group it belongs to."""
    held = list(own)
    for group in groups_of_user:
        held.extend(by_group.get(group, ()))
    return tuple(dict.fromkeys(held))  # same order, no duplicates


def grants(a: Assignment, permission: Permission, scope: Scope) -> bool:
    role = ROLES.get(a.role_id)
    if role is None or permission not in role.permissions:
        return False
    if a.workspace_id is None:
        return True  # cluster-wide: everywhere
    if permission in GLOBAL:
        return False
    return isinstance(scope, Anywhere) or scope == a.workspace_id


def decide(
    assignments: Iterable[Assignment], permission: Permission, scope: Scope, *, admin: bool = False
) -> Decision:
    """May the holder of `assignments` use `permission` in `scope`? An admin user holds
    ClusterAdmin implicitly (as Determined's built-in `admin`)."""
    if admin or any(grants(a, permission, scope) for a in assignments):
        return ALLOW
    where = (
        "anywhere"
        if isinstance(scope, Anywhere)
        else "cluster-wide"
        if scope is None
        else f"in workspace {scope}"
    )
    return Decision(False, f"permission {permission.value} is not granted {where}")


def workspaces_granting(
    assignments: Iterable[Assignment], permission: Permission, *, admin: bool = False
) -> frozenset[int] | None:
    """The workspaces where `permission` is granted: what a list shows under RBAC.

    None means every workspace (an admin, or a cluster-wide grant): the list is not filtered.
    """
    if admin:
        return None
    found: set[int] = set()
    for a in assignments:
        if not grants(a, permission, ANYWHERE):
            continue
        if a.workspace_id is None:
            return None
        found.add(a.workspace_id)
    return frozenset(found)


@dataclass(frozen=True)
class Holdings:
    """What the caller of one request holds under RBAC (its owner's, for a task's token)."""

    assignments: tuple[Assignment, ...]
    admin: bool = False

    def workspaces(self, permission: Permission) -> frozenset[int] | None:
        return workspaces_granting(self.assignments, permission, admin=self.admin)

    def decide(self, permission: Permission, scope: Scope) -> Decision:
        return decide(self.assignments, permission, scope, admin=self.admin)


def permissions_of(assignments: Iterable[Assignment]) -> dict[int | None, frozenset[Permission]]:
    """Scope (workspace id, None for cluster-wide) -> what the assignments grant there."""
    out: dict[int | None, set[Permission]] = {}
    for a in assignments:
        role = ROLES.get(a.role_id)
        if role is not None:
            out.setdefault(a.workspace_id, set()).update(role.permissions)
    return {scope: frozenset(perms) for scope, perms in out.items()}


def check_assignable(role_id: int, workspace_id: int | None) -> Role:
    """The role, if it exists and may be assigned in that scope; ValueError says why not."""
    role = ROLES.get(role_id)
    if role is None:
        known = ", ".join(f"{r.id} ({r.name})" for r in ROLES.values())
        raise ValueError(f"role {role_id} does not exist (roles: {known})")
    if workspace_id is not None and role.cluster_only:
        raise ValueError(f"role {role.name} can only be assigned cluster-wide")
    return role
