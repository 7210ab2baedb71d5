"""Routes x roles under RBAC, generated from the policy table (api/route_permissions.py).

The pure part walks every route and every caller (each role on a workspace or cluster-wide, a
user with no role, an admin, a trial's and a command's token) and checks what the table says
against the rules that must hold whatever the table holds. The live part runs a master with
`security.authz.type: rbac` on SQLite and PostgreSQL and checks that the API answers as the
table says for a sample of routes (at least one per permission the sample can reach without
agents), for every role.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.access import RULES
from controlplane.api.route_permissions import ANYWHERE, CLUSTER, KINDS, NEEDS, Need
from controlplane.config import MasterSettings
from controlplane.domain import rbac
from controlplane.domain.access import CallerKind, RouteClass, Target, decide
from controlplane.domain.rbac import ROLES, Assignment
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import experiment_yaml
from tests.support.live_master import LiveMaster, live_master

WS = 7  # the workspace every object of the generated world lives in


def test_every_route_has_a_permission_row_and_every_row_a_route() -> None:
    assert set(NEEDS) == set(RULES)


def test_admin_only_routes_need_a_global_permission_cluster_wide() -> None:
    for key, rule in RULES.items():
        need = NEEDS[key]
        if rule.route is RouteClass.ADMIN:
            assert need is not None and need.scope == CLUSTER, key
            assert need.permission in rbac.GLOBAL, key
            assert need.elevate_with == need.permission, key
        if rule.route in (RouteClass.PUBLIC, RouteClass.AGENT, RouteClass.TASK_REPORT):
            assert need is None, key
        if need is not None and need.scope not in (CLUSTER, ANYWHERE):
            assert need.scope in KINDS and f"{{{need.scope}:" in key[1], key


def test_elevation_never_comes_from_a_permission_a_workspace_role_holds_on_a_quota_route() -> None:
    """PATCH/POST workspaces may set slot quotas (admin only): only a global permission (that
    a workspace role never grants) may stand in for an admin there."""
    for key in (("PATCH", "/api/v1/workspaces/{workspace_id:int}"), ("POST", "/api/v1/workspaces")):
        need = NEEDS[key]
        assert need is not None and need.elevate_with in rbac.GLOBAL


# --- the generated matrix -----------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    name: str
    kind: CallerKind
    held: tuple[Assignment, ...] = ()
    admin: bool = False  # for a task: its owner's admin flag


def callers() -> list[Caller]:
    out = [
        Caller(f"{r.name}@{'cluster' if r.cluster_only else 'ws'}", CallerKind.USER,
               (Assignment(r.id, None if r.cluster_only else WS),))
        for r in ROLES.values()
    ]  # fmt: skip
    out += [
        Caller("Viewer@cluster", CallerKind.USER, (Assignment(4, None),)),
        Caller("Editor@other-ws", CallerKind.USER, (Assignment(5, WS + 1),)),
        Caller("no-role", CallerKind.USER),
        Caller("admin", CallerKind.ADMIN, admin=True),
        Caller("trial-of-editor", CallerKind.TRIAL, (Assignment(5, WS),)),
        Caller("command-of-cluster-admin", CallerKind.TASK, (Assignment(1, None),)),
        Caller("command-of-admin", CallerKind.TASK, admin=True),
    ]
    return out


def scope_of(need: Need) -> rbac.Scope:
    """Every object of the world, and every workspace a creation's body names, is WS."""
    if need.scope == CLUSTER:
        return None
    if need.scope == ANYWHERE and not need.body:
        return rbac.ANYWHERE
    return WS


def expected(key: tuple[str, str], caller: Caller) -> bool:
    """What the route x caller cell must answer (allowed past authorization) under RBAC."""
    rule, need = RULES[key], NEEDS[key]
    if caller.kind in (CallerKind.TRIAL, CallerKind.TASK):
        target = Target.NONE if rule.target is None else Target.OTHER
        if not decide(caller.kind, rule.route, target).allowed:
            return False
    elif caller.kind is CallerKind.USER and rule.route is RouteClass.AGENT:
        return False
    if need is None or caller.kind is CallerKind.ADMIN:
        return True
    return rbac.decide(caller.held, need.permission, scope_of(need), admin=caller.admin).allowed


MATRIX = {(key, c.name): expected(key, c) for key in RULES for c in callers()}


def test_the_matrix_covers_every_route_and_caller() -> None:
    assert len(MATRIX) == len(RULES) * len(callers())


def test_tasks_never_pass_an_admin_route_whatever_their_owner_holds() -> None:
    for (key, name), allowed in MATRIX.items():
        if name.startswith(("trial", "command")) and RULES[key].route is RouteClass.ADMIN:
            assert not allowed, (key, name)


def test_a_user_with_no_role_passes_only_routes_that_need_no_permission() -> None:
    for (key, name), allowed in MATRIX.items():
        if name == "no-role" and RULES[key].route is not RouteClass.AGENT:
            assert allowed == (NEEDS[key] is None), key


def test_a_role_on_another_workspace_grants_nothing_on_this_one() -> None:
    for key, need in NEEDS.items():
        if need is not None and need.kind is not None:
            assert not MATRIX[(key, "Editor@other-ws")], key


# --- live ---------------------------------------------------------------------------------------


@dataclass
class World:
    m: LiveMaster
    headers: dict[str, dict[str, str]]
    ws: int
    project: int
    experiment: int
    model: str
    template: str
    spare_user: int
    counter: itertools.count[int]

    def unique(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
async def rbac_master(db_url: str, tmp_path: Path) -> AsyncIterator[LiveMaster]:
    settings = MasterSettings(
        data_dir=tmp_path / "data",
        db={"url": db_url},
        security={"initial_user_password": PASSWORD, "authz": {"type": "rbac"}},
    )
    async with live_master(settings, PASSWORD) as m:
        yield m


async def make_user(m: LiveMaster, name: str) -> tuple[int, dict[str, str]]:
    from cli.auth import hash_password

    r = await m.http.post(
        "/api/v1/users",
        headers=m.admin,
        json={
            "user": {"username": name, "active": True},
            "password": hash_password(PASSWORD),
            "isHashed": True,
        },
    )
    assert r.status_code == 200, r.text
    return r.json()["user"]["id"], await m.login(name, PASSWORD)


async def assign(m: LiveMaster, user_id: int, role_id: int, ws: int | None) -> None:
    r = await m.http.post(
        "/api/v1/roles/add-assignments",
        headers=m.admin,
        json={
            "userRoleAssignments": [
                {"userId": user_id, "roleAssignment": {"role": {"roleId": role_id},
                                                        "scopeWorkspaceId": ws}}
            ]
        },
    )  # fmt: skip
    assert r.status_code == 200, r.text


async def build_world(m: LiveMaster) -> World:
    r = await m.http.post("/api/v1/workspaces", headers=m.admin, json={"name": "team"})
    assert r.status_code == 200, r.text
    ws = r.json()["workspace"]["id"]
    r = await m.http.post(
        f"/api/v1/workspaces/{ws}/projects", headers=m.admin, json={"name": "p", "workspaceId": ws}
    )
    assert r.status_code == 200, r.text
    project = r.json()["project"]["id"]
    r = await m.http.post("/api/v1/workspaces", headers=m.admin, json={"name": "other"})
    assert r.status_code == 200, r.text
    other = r.json()["workspace"]["id"]
    alice_id, alice = await make_user(m, "alice")
    await assign(m, alice_id, 5, ws)  # the owner of the objects: Editor on the workspace
    r = await m.http.post(
        "/api/v1/experiments",
        headers=alice,
        json={"config": experiment_yaml("e"), "projectId": project, "activate": False},
    )
    assert r.status_code == 200, r.text
    experiment = r.json()["experiment"]["id"]
    r = await m.http.post("/api/v1/models", headers=alice, json={"name": "m1", "workspaceId": ws})
    assert r.status_code == 200, r.text
    r = await m.http.post(
        "/api/v1/templates/t1",
        headers=alice,
        json={"name": "t1", "config": {"description": "x"}, "workspaceId": ws},
    )
    assert r.status_code == 200, r.text
    headers: dict[str, dict[str, str]] = {"admin": m.admin}
    spare, _ = await make_user(m, "spare")
    for c in callers():
        if c.kind is not CallerKind.USER:
            continue
        uid, h = await make_user(m, re.sub(r"[^a-z0-9]", "-", c.name.lower()))
        real = {None: None, WS: ws, WS + 1: other}  # the table's workspaces -> the world's
        for a in c.held:
            await assign(m, uid, a.role_id, real[a.workspace_id])
        headers[c.name] = h
    return World(m, headers, ws, project, experiment, "m1", "t1", spare, itertools.count())


def sample(w: World) -> dict[tuple[str, str], tuple[str, Any]]:
    """(method, route) -> (the path called, its body): routes whose answer past authorization
    depends on nothing else (each object is the owner's; a permission that is granted on it
    stands in for the owner check)."""
    e, p, ws = w.experiment, w.project, w.ws
    return {
        ("GET", "/api/v1/me"): ("/api/v1/me", None),
        ("GET", "/api/v1/experiments"): ("/api/v1/experiments", None),
        ("GET", "/api/v1/experiments/{experiment_id:int}"): (f"/api/v1/experiments/{e}", None),
        ("GET", "/api/v1/experiments/{experiment_id:int}/checkpoints"): (
            f"/api/v1/experiments/{e}/checkpoints", None),
        ("PATCH", "/api/v1/experiments/{experiment_id:int}"): (
            f"/api/v1/experiments/{e}", {"description": w.unique("d")}),
        ("POST", "/api/v1/experiments/{experiment_id:int}/pause"): (
            f"/api/v1/experiments/{e}/pause", {}),
        ("GET", "/api/v1/workspaces"): ("/api/v1/workspaces", None),
        ("GET", "/api/v1/workspaces/{workspace_id:int}"): (f"/api/v1/workspaces/{ws}", None),
        ("POST", "/api/v1/workspaces/{workspace_id:int}/projects"): (
            f"/api/v1/workspaces/{ws}/projects", {"name": w.unique("p"), "workspaceId": ws}),
        ("PATCH", "/api/v1/projects/{project_id:int}"): (
            f"/api/v1/projects/{p}", {"description": w.unique("d")}),
        ("POST", "/api/v1/workspaces"): ("/api/v1/workspaces", {"name": w.unique("w")}),
        ("GET", "/api/v1/tasks"): ("/api/v1/tasks", None),
        ("GET", "/api/v1/templates/{template_name:str}"): (f"/api/v1/templates/{w.template}", None),
        ("GET", "/api/v1/models/{model_name:str}"): (f"/api/v1/models/{w.model}", None),
        ("PATCH", "/api/v1/models/{model_name:str}"): (
            f"/api/v1/models/{w.model}", {"description": w.unique("d")}),
        ("POST", "/api/v1/models"): ("/api/v1/models", {"name": w.unique("m"), "workspaceId": ws}),
        ("GET", "/api/v1/master/config"): ("/api/v1/master/config", None),
        ("POST", "/api/v1/groups"): ("/api/v1/groups", {"name": w.unique("g")}),
        ("POST", "/api/v1/roles/add-assignments"): ("/api/v1/roles/add-assignments", {
            "userRoleAssignments": [{"userId": w.spare_user,
                                     "roleAssignment": {"role": {"roleId": 4},
                                                        "scopeWorkspaceId": ws}}]}),
        ("GET", "/api/v1/master/audit"): ("/api/v1/master/audit", None),
        ("GET", "/api/v1/permissions/summary"): ("/api/v1/permissions/summary", None),
    }  # fmt: skip


@pytest.mark.timeout(120)
async def test_the_api_answers_as_the_table_says(rbac_master: LiveMaster) -> None:
    m = rbac_master
    w = await build_world(m)
    routes = sample(w)
    permissions = {NEEDS[k].permission for k in routes if NEEDS[k] is not None}  # type: ignore[union-attr]
    assert len(permissions) >= 14  # a sample across the permissions, not one corner
    wrong: list[str] = []
    for key in routes:
        for c in callers():
            if c.name not in w.headers:
                continue
            path, body = sample(w)[key]  # fresh names for each call
            r = await m.http.request(key[0], path, json=body, headers=w.headers[c.name])
            allowed = MATRIX[(key, c.name)]
            if allowed == (r.status_code == 403) or (allowed and r.status_code >= 400):
                wrong.append(f"{c.name} {key[0]} {path}: {r.status_code} {r.text[:160]}")
    assert not wrong, "\n".join(wrong)


async def test_rbac_on_shows_in_the_handshake_and_an_unknown_object_is_a_404_for_a_holder(
    rbac_master: LiveMaster,
) -> None:
    m = rbac_master
    assert (await m.http.get("/api/v1/master")).json()["rbacEnabled"] is True
    uid, viewer = await make_user(m, "v")
    await assign(m, uid, 4, None)
    assert (await m.http.get("/api/v1/experiments/999", headers=viewer)).status_code == 404
    _, nobody = await make_user(m, "n")
    assert (await m.http.get("/api/v1/experiments/999", headers=nobody)).status_code == 403
    # Revoking takes effect at once (the per-process cache is dropped on commit).
    r = await m.http.post(
        "/api/v1/roles/remove-assignments",
        headers=m.admin,
        json={"userRoleAssignments": [{"userId": uid, "roleAssignment": {"role": {"roleId": 4}}}]},
    )
    assert r.status_code == 200, r.text
    assert (await m.http.get("/api/v1/experiments/999", headers=viewer)).status_code == 403
