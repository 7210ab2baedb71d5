"""User groups, roles and role assignments: the endpoints Determined 0.38.1's client calls
(`/api/v1/groups…`, `/api/v1/roles…`, `/api/v1/permissions/summary`,
`PATCH /api/v1/users/assignments`), in its shapes.

Managing groups and assignments is for admins (and, with RBAC on, ClusterAdmins) in both
modes; reading them is for anyone logged in. The roles are the table in
`controlplane.domain.rbac`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from litestar import delete, get, patch, post, put
from litestar.params import JSONBody

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.rbac import (
    AssignMultipleGroupsRequest,
    AssignRolesRequest,
    CreateGroupRequest,
    GetGroupsRequest,
    GetGroupsResponse,
    GetRolesByIdRequest,
    Group,
    GroupDetails,
    GroupResponse,
    GroupRoleAssignmentOut,
    GroupSearchResult,
    ListRolesRequest,
    ListRolesResponse,
    PermissionOut,
    RoleAssignmentIn,
    RoleAssignmentOut,
    RoleAssignmentSummary,
    RoleOut,
    RolesAndAssignmentsResponse,
    RolesWithAssignmentsResponse,
    RoleWithAssignments,
    ScopeTypeMask,
    SearchRolesAssignableToScopeRequest,
    UpdateGroupRequest,
    UserRoleAssignmentOut,
    WorkspaceAssignmentsResponse,
)
from controlplane.api.schemas.reports import Empty
from controlplane.api.serializers import user_out
from controlplane.db.models import RoleAssignment
from controlplane.domain import rbac as policy
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.services import audit
from controlplane.services import rbac as service
from controlplane.services.users import get_user, require_admin
from controlplane.services.workspaces import get_workspace

_GROUP = "/api/v1/groups/{group_id:int}"


# --- wire shapes ---------------------------------------------------------------------------------


def _mask(cluster_only: bool) -> ScopeTypeMask:
    return ScopeTypeMask(cluster=True, workspace=not cluster_only)


def permission_out(p: policy.Permission) -> PermissionOut:
    return PermissionOut(id=p.value, name=p.label, scope_type_mask=_mask(p in policy.GLOBAL))


def role_out(role: policy.Role) -> RoleOut:
    return RoleOut(
        role_id=role.id,
        name=role.name,
        permissions=[permission_out(p) for p in policy.Permission if p in role.permissions],
        scope_type_mask=_mask(role.cluster_only),
    )


def _role(role_id: int) -> policy.Role:
    role = policy.ROLES.get(role_id)
    if role is None:
        raise NotFound(f"role {role_id} not found")
    return role


def _assignment_out(row: RoleAssignment) -> RoleAssignmentOut:
    return RoleAssignmentOut(
        role=RoleOut(role_id=row.role_id, name=_role(row.role_id).name),
        scope_workspace_id=row.workspace_id,
        scope_cluster=row.workspace_id is None,
    )


def _with_assignments(
    rows: Iterable[RoleAssignment], roles: Iterable[int] = ()
) -> list[RoleWithAssignments]:
    """Rows grouped by role, in role id order (`roles`: listed even with no rows)."""
    by_role: dict[int, RoleWithAssignments] = {
        r: RoleWithAssignments(role=role_out(_role(r))) for r in roles
    }
    for row in rows:
        if row.role_id not in policy.ROLES:
            continue
        entry = by_role.setdefault(
            row.role_id, RoleWithAssignments(role=role_out(_role(row.role_id)))
        )
        if row.user_id is not None:
            entry.user_role_assignments.append(
                UserRoleAssignmentOut(user_id=row.user_id, role_assignment=_assignment_out(row))
            )
        else:
            entry.group_role_assignments.append(
                GroupRoleAssignmentOut(
                    group_id=row.group_id or 0, role_assignment=_assignment_out(row)
                )
            )
    return [by_role[r] for r in sorted(by_role)]


def _summary(held: Iterable[policy.Assignment]) -> RolesAndAssignmentsResponse:
    scopes: dict[int, RoleAssignmentSummary] = {}
    for a in held:
        if a.role_id not in policy.ROLES:
            continue
        s = scopes.setdefault(a.role_id, RoleAssignmentSummary(role_id=a.role_id))
        if a.workspace_id is None:
            s.scope_cluster = True
        elif a.workspace_id not in s.scope_workspace_ids:
            s.scope_workspace_ids.append(a.workspace_id)
    return RolesAndAssignmentsResponse(
        roles=[role_out(policy.ROLES[r]) for r in sorted(scopes)],
        assignments=[scopes[r] for r in sorted(scopes)],
    )


def _details(d: service.GroupDetails) -> GroupDetails:
    return GroupDetails(
        group_id=d.group.id, name=d.group.name, users=[user_out(u) for u in d.users]
    )


def _page(items: Sequence[RoleOut], offset: int, limit: int) -> tuple[list[RoleOut], Pagination]:
    chunk = list(items[offset:] if limit == 0 else items[offset : offset + limit])
    return chunk, Pagination.of(offset, limit, len(chunk), len(items))


# --- groups --------------------------------------------------------------------------------------


@post("/api/v1/groups", status_code=200)
async def create_group(
    data: JSONBody[CreateGroupRequest], db: Db, principal: Caller, ctx: Ctx
) -> GroupResponse:
    """CreateGroup: a group, with its first members."""
    require_admin(principal.user)
    details = await service.create_group(db, data.name, data.add_users or [], ctx.clock())
    audit.note(db, group_id=details.group.id, name=data.name, add_users=data.add_users)
    return GroupResponse(group=_details(details))


@post("/api/v1/groups/search", status_code=200)
async def search_groups(
    data: JSONBody[GetGroupsRequest], db: Db, principal: Caller
) -> GetGroupsResponse:
    """GetGroups: by exact name and/or member; `limit` 0 is all."""
    rows, total = await service.search_groups(
        db,
        name=data.name,
        user_id=data.user_id,
        offset=data.offset,
        limit=data.limit or -1,
    )
    return GetGroupsResponse(
        groups=[
            GroupSearchResult(group=Group(group_id=g.id, name=g.name), num_members=n)
            for g, n in rows
        ],
        pagination=Pagination.of(data.offset, data.limit, len(rows), total),
    )


@get(_GROUP)
async def get_group(group_id: Id32, db: Db, principal: Caller) -> GroupResponse:
    """GetGroup: the group and its members."""
    return GroupResponse(group=_details(await service.group_details(db, group_id)))


@put(_GROUP, status_code=200)
async def update_group(
    group_id: Id32, data: JSONBody[UpdateGroupRequest], db: Db, principal: Caller
) -> GroupResponse:
    """UpdateGroup: rename, add and remove members."""
    require_admin(principal.user)
    if data.group_id is not None and data.group_id != group_id:
        raise InvalidArgument(f"body groupId {data.group_id} does not match the path's {group_id}")
    details = await service.update_group(
        db,
        group_id,
        name=data.name,
        add_users=data.add_users or [],
        remove_users=data.remove_users or [],
    )
    audit.note(db, name=data.name, add_users=data.add_users, remove_users=data.remove_users)
    return GroupResponse(group=_details(details))


@delete(_GROUP, status_code=200)
async def delete_group(group_id: Id32, db: Db, principal: Caller) -> Empty:
    """DeleteGroup: the group, its memberships and its role assignments."""
    require_admin(principal.user)
    await service.delete_group(db, group_id)
    return Empty()


@patch("/api/v1/users/assignments", status_code=200)
async def assign_multiple_groups(
    data: JSONBody[AssignMultipleGroupsRequest], db: Db, principal: Caller
) -> Empty:
    """AssignMultipleGroups: every user joins addGroups and leaves removeGroups."""
    require_admin(principal.user)
    if set(data.add_groups) & set(data.remove_groups):
        raise InvalidArgument("a group cannot be in both addGroups and removeGroups")
    await service.assign_multiple_groups(db, data.user_ids, data.add_groups, data.remove_groups)
    audit.note(
        db, user_ids=data.user_ids, add_groups=data.add_groups, remove_groups=data.remove_groups
    )
    return Empty()


# --- roles ---------------------------------------------------------------------------------------


@post("/api/v1/roles/search", status_code=200)
async def list_roles(data: JSONBody[ListRolesRequest], principal: Caller) -> ListRolesResponse:
    """ListRoles: every role with its permissions."""
    roles, page = _page([role_out(r) for r in policy.ROLES.values()], data.offset, data.limit)
    return ListRolesResponse(roles=roles, pagination=page)


@post("/api/v1/roles/search/by-assignability", status_code=200)
async def search_roles_assignable(
    data: JSONBody[SearchRolesAssignableToScopeRequest], db: Db, principal: Caller
) -> ListRolesResponse:
    """SearchRolesAssignableToScope: with a workspace, the roles a workspace may be given."""
    roles = [
        role_out(r)
        for r in policy.ROLES.values()
        if data.workspace_id is None or not r.cluster_only
    ]
    chunk, page = _page(roles, data.offset, data.limit)
    return ListRolesResponse(roles=chunk, pagination=page)


@post("/api/v1/roles/search/by-ids", status_code=200)
async def get_roles_by_id(
    data: JSONBody[GetRolesByIdRequest], db: Db, principal: Caller
) -> RolesWithAssignmentsResponse:
    """GetRolesByID: the roles and every assignment of each."""
    for role_id in data.role_ids:
        _role(role_id)
    rows = await service.assignment_rows(db, role_ids=data.role_ids)
    return RolesWithAssignmentsResponse(roles=_with_assignments(rows, data.role_ids))


@get("/api/v1/roles/search/by-user/{user_id:int}")
async def roles_of_user(user_id: Id32, db: Db, principal: Caller) -> RolesWithAssignmentsResponse:
    """GetRolesAssignedToUser: the user's own assignments and its groups'."""
    await get_user(db, user_id)
    rows = await service.assignment_rows(db, user_id=user_id, with_groups_of_user=True)
    return RolesWithAssignmentsResponse(roles=_with_assignments(rows))


@get("/api/v1/roles/search/by-group/{group_id:int}")
async def roles_of_group(group_id: Id32, db: Db, principal: Caller) -> RolesAndAssignmentsResponse:
    """GetRolesAssignedToGroup."""
    await service.get_group(db, group_id)
    rows = await service.assignment_rows(db, group_id=group_id)
    return _summary(policy.Assignment(r.role_id, r.workspace_id) for r in rows)


@get("/api/v1/roles/workspace/{workspace_id:int}")
async def workspace_assignments(
    workspace_id: Id32, db: Db, principal: Caller
) -> WorkspaceAssignmentsResponse:
    """GetGroupsAndUsersAssignedToWorkspace: who holds which role on the workspace."""
    await get_workspace(db, workspace_id)
    rows = await service.assignment_rows(db, workspace_id=workspace_id)
    groups = [
        _details(await service.group_details(db, g))
        for g in sorted({r.group_id for r in rows if r.group_id is not None})
    ]
    users = [
        user_out(await get_user(db, u))
        for u in sorted({r.user_id for r in rows if r.user_id is not None})
    ]
    return WorkspaceAssignmentsResponse(
        assignments=_with_assignments(rows), groups=groups, users_assigned_directly=users
    )


def _grants(data: AssignRolesRequest) -> list[service.Grant]:
    def scope(a: RoleAssignmentIn) -> int | None:
        if a.scope_cluster and a.scope_workspace_id is not None:
            raise InvalidArgument("an assignment is cluster-wide or on a workspace, not both")
        return a.scope_workspace_id

    grants = [
        service.Grant(u.role_assignment.role.role_id, scope(u.role_assignment), user_id=u.user_id)
        for u in data.user_role_assignments
    ] + [
        service.Grant(g.role_assignment.role.role_id, scope(g.role_assignment), group_id=g.group_id)
        for g in data.group_role_assignments
    ]
    if not grants:
        raise InvalidArgument("no role assignment given")
    return grants


def _note(db: Db, grants: list[service.Grant]) -> None:
    audit.note(
        db,
        assignments=[{k: v for k, v in vars(g).items() if v is not None} for g in grants],
    )


@post("/api/v1/roles/add-assignments", status_code=200)
async def add_assignments(data: JSONBody[AssignRolesRequest], db: Db, principal: Caller) -> Empty:
    """AssignRoles: adds role assignments to users and groups."""
    require_admin(principal.user)
    grants = _grants(data)
    _note(db, grants)
    await service.add_assignments(db, grants)
    return Empty()


@post("/api/v1/roles/remove-assignments", status_code=200)
async def remove_assignments(
    data: JSONBody[AssignRolesRequest], db: Db, principal: Caller
) -> Empty:
    """RemoveAssignments: removes role assignments (all of them, or none)."""
    require_admin(principal.user)
    grants = _grants(data)
    _note(db, grants)
    await service.remove_assignments(db, grants)
    return Empty()


@get("/api/v1/permissions/summary")
async def permissions_summary(db: Db, principal: Caller) -> RolesAndAssignmentsResponse:
    """GetPermissionsSummary: the caller's roles and where it holds them (an admin user holds
    ClusterAdmin cluster-wide)."""
    held: list[policy.Assignment] = list(await service.held_by(db, principal.user.id))
    if principal.user.admin and principal.allocation is None:
        held.insert(0, policy.Assignment(policy.CLUSTER_ADMIN.id, None))
    return _summary(held)


ROUTES = [
    create_group,
    search_groups,
    get_group,
    update_group,
    delete_group,
    assign_multiple_groups,
    list_roles,
    search_roles_assignable,
    get_roles_by_id,
    roles_of_user,
    roles_of_group,
    workspace_assignments,
    add_assignments,
    remove_assignments,
    permissions_summary,
]
