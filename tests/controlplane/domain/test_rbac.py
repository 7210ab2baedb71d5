"""The RBAC policy table: Determined's roles and permission names, the roles' order, and
`decide` (scopes, groups, global permissions) as properties."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import rbac
from controlplane.domain.rbac import (
    ANYWHERE,
    CLUSTER_ADMIN,
    EDITOR,
    EDITOR_RESTRICTED,
    GLOBAL,
    ROLES,
    VIEWER,
    WORKSPACE_ADMIN,
    WORKSPACE_CREATOR,
    Assignment,
    Permission,
    decide,
    effective,
)

BINDINGS = (
    Path(__file__).resolve().parents[3]
    / ".venv-det/lib/python3.11/site-packages/determined/common/api/bindings.py"
)


def test_the_roles_are_determineds() -> None:
    assert {r.id: r.name for r in ROLES.values()} == {
        1: "ClusterAdmin",
        2: "WorkspaceAdmin",
        3: "WorkspaceCreator",
        4: "Viewer",
        5: "Editor",
        7: "EditorRestricted",
    }


@pytest.mark.skipif(not BINDINGS.exists(), reason="the real determined client is not installed")
def test_the_permissions_are_the_real_clients() -> None:
    text = BINDINGS.read_text()
    block = text[text.index("class v1PermissionType(DetEnum):") :]
    block = block[: block.index("\nclass ")]
    names = set(re.findall(r'= "(PERMISSION_TYPE_\w+)"', block)) - {"PERMISSION_TYPE_UNSPECIFIED"}
    assert names == {p.value for p in Permission}


def test_each_role_supersedes_the_one_below() -> None:
    chain = [CLUSTER_ADMIN, WORKSPACE_ADMIN, EDITOR, EDITOR_RESTRICTED, VIEWER]
    for higher, lower in itertools.pairwise(chain):
        assert lower.permissions < higher.permissions, (higher.name, lower.name)
    assert WORKSPACE_CREATOR.permissions < CLUSTER_ADMIN.permissions
    assert CLUSTER_ADMIN.permissions == frozenset(Permission)
    # EditorRestricted: Editor without creating or changing notebooks, shells, commands.
    assert EDITOR.permissions - EDITOR_RESTRICTED.permissions == {
        Permission.CREATE_NSC,
        Permission.UPDATE_NSC,
    }


def test_only_roles_without_global_permissions_go_on_a_workspace() -> None:
    assert {r.name for r in ROLES.values() if r.cluster_only} == {
        "ClusterAdmin",
        "WorkspaceCreator",
    }
    with pytest.raises(ValueError, match="only be assigned cluster-wide"):
        rbac.check_assignable(CLUSTER_ADMIN.id, 3)
    with pytest.raises(ValueError, match="does not exist"):
        rbac.check_assignable(6, None)
    assert rbac.check_assignable(EDITOR.id, 3) is EDITOR


role_ids = st.sampled_from(sorted(ROLES))
workspaces = st.integers(min_value=1, max_value=4)
assignments = st.builds(Assignment, role_ids, st.none() | workspaces)
scopes = st.none() | workspaces | st.just(ANYWHERE)
permissions = st.sampled_from(list(Permission))


@given(st.lists(assignments, max_size=6), permissions, scopes)
def test_a_groups_assignment_grants_what_the_same_own_assignment_would(
    held: list[Assignment], permission: Permission, scope: rbac.Scope
) -> None:
    direct = decide(held, permission, scope).allowed
    via_group = decide(effective([], [9], {9: held}), permission, scope).allowed
    split = decide(effective(held[:1], [9], {9: held[1:]}), permission, scope).allowed
    assert direct == via_group == split


@given(assignments, permissions, scopes)
def test_a_higher_role_grants_whatever_a_lower_one_does(
    a: Assignment, permission: Permission, scope: rbac.Scope
) -> None:
    chain = [VIEWER, EDITOR_RESTRICTED, EDITOR, WORKSPACE_ADMIN, CLUSTER_ADMIN]
    role = ROLES[a.role_id]
    if role not in chain or (role is not CLUSTER_ADMIN and a.workspace_id is None):
        return
    for higher in chain[chain.index(role) :]:
        if higher.cluster_only and a.workspace_id is not None:
            continue
        if decide([a], permission, scope).allowed:
            assert decide([Assignment(higher.id, a.workspace_id)], permission, scope).allowed


@given(role_ids, workspaces, permissions, workspaces)
def test_a_workspace_assignment_grants_only_there_and_never_a_global_permission(
    role_id: int, ws: int, permission: Permission, elsewhere: int
) -> None:
    a = Assignment(role_id, ws)
    in_role = permission in ROLES[role_id].permissions
    assert decide([a], permission, ws).allowed == (in_role and permission not in GLOBAL)
    assert decide([a], permission, ANYWHERE).allowed == (in_role and permission not in GLOBAL)
    assert not decide([a], permission, None).allowed  # never cluster-wide
    if elsewhere != ws:
        assert not decide([a], permission, elsewhere).allowed


@given(role_ids, permissions, scopes)
def test_a_cluster_assignment_grants_its_permissions_everywhere(
    role_id: int, permission: Permission, scope: rbac.Scope
) -> None:
    allowed = decide([Assignment(role_id, None)], permission, scope).allowed
    assert allowed == (permission in ROLES[role_id].permissions)


@given(permissions, scopes)
def test_an_admin_user_holds_cluster_admin_and_nobody_else_holds_anything(
    permission: Permission, scope: rbac.Scope
) -> None:
    assert decide([], permission, scope, admin=True).allowed
    refused = decide([], permission, scope)
    assert not refused.allowed and permission.value in refused.reason


@given(st.lists(assignments, max_size=6), permissions, workspaces)
def test_a_list_shows_exactly_the_workspaces_where_the_permission_is_granted(
    held: list[Assignment], permission: Permission, ws: int
) -> None:
    """`workspaces_granting` (what a list shows) agrees with `decide` on every workspace;
    None (no filter) exactly when a cluster-wide grant or the admin flag grants it everywhere."""
    shown = rbac.workspaces_granting(held, permission)
    if shown is None:
        assert decide(held, permission, None).allowed
    else:
        assert (ws in shown) == decide(held, permission, ws).allowed
        assert not decide(held, permission, None).allowed
    assert rbac.workspaces_granting(held, permission, admin=True) is None
    assert rbac.Holdings(tuple(held)).workspaces(permission) == shown


def test_a_viewer_of_two_workspaces_lists_those_two() -> None:
    held = [Assignment(VIEWER.id, 3), Assignment(EDITOR.id, 5), Assignment(WORKSPACE_CREATOR.id)]
    assert rbac.workspaces_granting(held, Permission.VIEW_EXPERIMENT_METADATA) == {3, 5}
    assert rbac.workspaces_granting(held, Permission.CREATE_NSC) == {5}
    assert rbac.workspaces_granting([], Permission.VIEW_WORKSPACE) == frozenset()
    assert rbac.workspaces_granting([*held, Assignment(VIEWER.id)], Permission.VIEW_NSC) is None
