"""User groups, roles and role assignments on the wire: Determined 0.38.1's v1Group*, v1Role*,
v1*RoleAssignment* and v1PermissionsSummary shapes (its ids here are int32: JSON numbers)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from controlplane.api.schemas.common import INT32_MAX, Pagination, Wire
from controlplane.api.schemas.users import UserOut

Id = Annotated[int, Field(ge=1, le=INT32_MAX)]
Ids = Annotated[list[Id], Field(max_length=10_000)]
PageLimit = Annotated[int, Field(ge=0, le=INT32_MAX)]
PageOffset = Annotated[int, Field(ge=0, le=INT32_MAX)]
GroupName = Annotated[str, Field(min_length=1, max_length=255)]


class Group(Wire):
    group_id: int
    name: str


class GroupDetails(Wire):
    group_id: int
    name: str
    users: list[UserOut] = []


class GroupResponse(Wire):
    """v1CreateGroupResponse, v1GetGroupResponse, v1UpdateGroupResponse."""

    group: GroupDetails


class CreateGroupRequest(Wire):
    name: GroupName
    add_users: Ids | None = None


class UpdateGroupRequest(Wire):
    group_id: Id | None = None  # repeats the path's; must match it when given
    name: GroupName | None = None
    add_users: Ids | None = None
    remove_users: Ids | None = None


class GetGroupsRequest(Wire):
    limit: PageLimit = 0  # 0: all
    offset: PageOffset = 0
    name: str | None = Field(None, max_length=255)
    user_id: Id | None = None


class GroupSearchResult(Wire):
    group: Group
    num_members: int


class GetGroupsResponse(Wire):
    groups: list[GroupSearchResult]
    pagination: Pagination


class AssignMultipleGroupsRequest(Wire):
    user_ids: Ids
    add_groups: Ids = []
    remove_groups: Ids = []


class ScopeTypeMask(Wire):
    cluster: bool
    workspace: bool


class PermissionOut(Wire):
    id: str  # v1PermissionType's name
    name: str
    scope_type_mask: ScopeTypeMask


class RoleOut(Wire):
    role_id: int
    name: str | None = None
    permissions: list[PermissionOut] | None = None
    scope_type_mask: ScopeTypeMask | None = None


class RoleRef(Wire):
    """A role as a request names it: only its id counts."""

    role_id: Annotated[int, Field(ge=0, le=INT32_MAX)]
    name: str | None = Field(None, max_length=255)


class RoleAssignmentIn(Wire):
    role: RoleRef
    scope_workspace_id: Id | None = None  # absent or null: cluster-wide
    scope_cluster: bool | None = None


class RoleAssignmentOut(Wire):
    role: RoleOut
    scope_workspace_id: int | None = None
    scope_cluster: bool


class UserRoleAssignmentIn(Wire):
    user_id: Id
    role_assignment: RoleAssignmentIn


class GroupRoleAssignmentIn(Wire):
    group_id: Id
    role_assignment: RoleAssignmentIn


class UserRoleAssignmentOut(Wire):
    user_id: int
    role_assignment: RoleAssignmentOut


class GroupRoleAssignmentOut(Wire):
    group_id: int
    role_assignment: RoleAssignmentOut


class AssignRolesRequest(Wire):
    """v1AssignRolesRequest and v1RemoveAssignmentsRequest."""

    user_role_assignments: Annotated[list[UserRoleAssignmentIn], Field(max_length=10_000)] = []
    group_role_assignments: Annotated[list[GroupRoleAssignmentIn], Field(max_length=10_000)] = []


class RoleWithAssignments(Wire):
    role: RoleOut
    group_role_assignments: list[GroupRoleAssignmentOut] = []
    user_role_assignments: list[UserRoleAssignmentOut] = []


class ListRolesRequest(Wire):
    limit: PageLimit = 0
    offset: PageOffset = 0


class ListRolesResponse(Wire):
    roles: list[RoleOut]
    pagination: Pagination


class SearchRolesAssignableToScopeRequest(Wire):
    limit: PageLimit = 0
    offset: PageOffset = 0
    workspace_id: Id | None = None  # given: only roles a workspace may be given


class GetRolesByIdRequest(Wire):
    role_ids: Annotated[
        list[Annotated[int, Field(ge=0, le=INT32_MAX)]], Field(max_length=1000)
    ] = []


class RolesWithAssignmentsResponse(Wire):
    """v1GetRolesByIDResponse and v1GetRolesAssignedToUserResponse."""

    roles: list[RoleWithAssignments]


class RoleAssignmentSummary(Wire):
    role_id: int
    scope_workspace_ids: list[int] = []
    scope_cluster: bool = False


class RolesAndAssignmentsResponse(Wire):
    """v1GetPermissionsSummaryResponse and v1GetRolesAssignedToGroupResponse."""

    roles: list[RoleOut]
    assignments: list[RoleAssignmentSummary]


class WorkspaceAssignmentsResponse(Wire):
    """v1GetGroupsAndUsersAssignedToWorkspaceResponse."""

    assignments: list[RoleWithAssignments]
    groups: list[GroupDetails]
    users_assigned_directly: list[UserOut]
