"""Under RBAC, a creation or a move is judged where the object lands, however it is named.

alice is an Editor of workspace A and a Viewer of workspace B. She may create experiments,
commands, notebooks, TensorBoards, shells, models and templates in A, whether the request names
A by id or an experiment's config names A's workspace and project; she may not put any of them
in B (by id, by config names) or in the default workspace, where they land when nothing is
named and she holds no role. Moving an experiment, a project or a model into B is refused, and
so is continuing an experiment of hers where she no longer may create experiments. With RBAC
off, the same requests are allowed as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from cli.auth import hash_password
from controlplane.app import create_app
from controlplane.config import MasterSettings
from tests.conftest import PASSWORD, Master
from tests.support.db_template import migrated

EDITOR, VIEWER = 5, 4


def exp_yaml(name: str, place: tuple[str, str] | None = None) -> str:
    lines = [f"name: {name}", "entrypoint: python3 train.py", "searcher:", "  name: single",
             "  metric: loss", "  max_length:", "    batches: 10"]  # fmt: skip
    if place is not None:
        lines += [f"workspace: {place[0]}", f"project: {place[1]}"]
    return "\n".join(lines) + "\n"


@dataclass
class World:
    m: Master
    alice: dict[str, str]
    alice_id: int
    a: int
    b: int
    pa: int
    pa2: int
    pb: int
    rbac: bool

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        return await self.m.client.request(method, path, json=body, headers=self.alice)


async def _ok(m: Master, method: str, path: str, body: Any = None) -> Any:
    r = await m.client.request(method, path, json=body, headers=m.admin)
    assert r.status_code == 200, (path, r.text)
    return r.json()


async def _assign(m: Master, user_id: int, role: int, ws: int, *, remove: bool = False) -> None:
    body = {"userRoleAssignments": [{"userId": user_id, "roleAssignment": {
        "role": {"roleId": role}, "scopeWorkspaceId": ws}}]}  # fmt: skip
    verb = "remove" if remove else "add"
    await _ok(m, "POST", f"/api/v1/roles/{verb}-assignments", body)


@pytest.fixture(params=["rbac", "basic"])
async def world(
    request: pytest.FixtureRequest, db_url: str, tmp_path: Path
) -> AsyncIterator[World]:
    await migrated(db_url)
    settings = MasterSettings(
        data_dir=tmp_path / "data",
        db={"url": db_url},
        security={"initial_user_password": PASSWORD, "authz": {"type": request.param}},
    )
    app = create_app(settings, announce=lambda _: None)
    async with AsyncTestClient(app=app, base_url="http://127.0.0.1") as client:
        m = Master(client=client, admin={}, user={})
        m.admin = await m.login("admin")
        user = {"user": {"username": "alice", "active": True},
                "password": hash_password(PASSWORD), "isHashed": True}  # fmt: skip
        alice_id = (await _ok(m, "POST", "/api/v1/users", user))["user"]["id"]
        ids = {}
        for tag in ("A", "B"):
            ws = (await _ok(m, "POST", "/api/v1/workspaces", {"name": tag}))["workspace"]["id"]
            ids[tag] = ws
            for p in (f"p{tag}", f"p{tag}2"):
                made = await _ok(m, "POST", f"/api/v1/workspaces/{ws}/projects", {"name": p})
                ids[p] = made["project"]["id"]
        await _assign(m, alice_id, EDITOR, ids["A"])
        await _assign(m, alice_id, VIEWER, ids["B"])
        yield World(m, await m.login("alice"), alice_id, ids["A"], ids["B"], ids["pA"],
                    ids["pA2"], ids["pB"], rbac=request.param == "rbac")  # fmt: skip


def expect(w: World, allowed_under_rbac: bool) -> int:
    return 200 if allowed_under_rbac or not w.rbac else 403


async def test_an_experiment_is_judged_where_its_config_names_place_it(world: World) -> None:
    w = world
    cases = [
        ({"config": exp_yaml("in-a", ("A", "pA"))}, True),
        ({"config": exp_yaml("in-b", ("B", "pB"))}, False),  # was judged "anywhere": 200
        ({"config": exp_yaml("named-nowhere")}, False),  # the default workspace: no role there
        ({"config": exp_yaml("by-id"), "projectId": w.pa}, True),
        ({"config": exp_yaml("by-id-b"), "projectId": w.pb}, False),
    ]
    for body, allowed in cases:
        r = await w.call("POST", "/api/v1/experiments", {**body, "activate": False})
        assert r.status_code == expect(w, allowed), (body, r.text)
        if r.status_code == 403:
            assert "PERMISSION_TYPE_CREATE_EXPERIMENT" in r.text, r.text
    # Nothing was made where she was refused.
    names = {e["name"] for e in (await _ok(w.m, "GET", "/api/v1/experiments"))["experiments"]}
    assert ("in-b" in names) == (not w.rbac) and ("in-a" in names)


@pytest.mark.parametrize("plural", ["commands", "notebooks", "tensorboards", "shells"])
async def test_commands_and_interactive_tasks_are_judged_where_they_land(
    world: World, plural: str
) -> None:
    w = world
    made = await w.call("POST", "/api/v1/experiments",
                        {"config": exp_yaml("src", ("A", "pA")), "activate": False})  # fmt: skip
    assert made.status_code == 200, made.text
    config: dict[str, Any] = {"resources": {"slots": 0}}
    if plural == "commands":
        config["entrypoint"] = ["true"]
    extra = {"experimentIds": [made.json()["experiment"]["id"]]} if plural == "tensorboards" else {}
    for where, allowed in ((w.a, True), (w.b, False), (None, False)):
        body = {"config": config, **extra}
        if where is not None:
            body["workspaceId"] = where
        r = await w.call("POST", f"/api/v1/{plural}", body)
        assert r.status_code == expect(w, allowed), (where, r.text)
        if r.status_code == 403:
            assert "PERMISSION_TYPE_CREATE_NSC" in r.text, r.text


async def test_models_and_templates_land_where_she_may_create_them(world: World) -> None:
    w = world
    for body, allowed in (({"name": "m-a", "workspaceId": w.a}, True),
                          ({"name": "m-b", "workspaceName": "B"}, False),
                          ({"name": "m-default"}, False)):  # fmt: skip
        r = await w.call("POST", "/api/v1/models", body)
        assert r.status_code == expect(w, allowed), (body, r.text)
    # A patch naming another workspace moves the model there.
    r = await w.call("PATCH", "/api/v1/models/m-a", {"workspaceName": "B"})
    assert r.status_code == expect(w, False), r.text
    for name, body, allowed in (("t-a", {"workspaceId": w.a}, True), ("t-default", {}, False)):
        r = await w.call("POST", f"/api/v1/templates/{name}", {"config": {"x": 1}, **body})
        assert r.status_code == expect(w, allowed), (name, r.text)


async def test_moves_are_judged_where_the_object_goes(world: World) -> None:
    w = world
    exp_ids = []
    for i in range(3):
        r = await w.call("POST", "/api/v1/experiments",
                         {"config": exp_yaml(f"e{i}", ("A", "pA")), "activate": False})  # fmt: skip
        assert r.status_code == 200, r.text
        exp_ids.append(r.json()["experiment"]["id"])
    r = await w.call(
        "POST", f"/api/v1/experiments/{exp_ids[0]}/move", {"destinationProjectId": w.pb}
    )
    assert r.status_code == expect(w, False), r.text
    r = await w.call("POST", "/api/v1/experiments/move",
                     {"experimentIds": [exp_ids[1]], "destinationProjectId": w.pb})  # fmt: skip
    assert r.status_code == expect(w, False), r.text
    r = await w.call("POST", f"/api/v1/experiments/{exp_ids[2]}/move",
                     {"destinationProjectId": w.pa2})  # fmt: skip
    assert r.status_code == 200, r.text
    r = await w.call("POST", "/api/v1/experiments/move",
                     {"experimentIds": [exp_ids[1]], "destinationProjectId": w.pa2})  # fmt: skip
    assert r.status_code == 200 and r.json()["results"] == [{"error": "", "id": exp_ids[1]}]
    # her project and her model, into B
    project = await w.call("POST", f"/api/v1/workspaces/{w.a}/projects", {"name": "mine"})
    assert project.status_code == 200, project.text
    r = await w.call("POST", f"/api/v1/projects/{project.json()['project']['id']}/move",
                     {"destinationWorkspaceId": w.b})  # fmt: skip
    assert r.status_code == expect(w, False), r.text
    assert (await w.call("POST", "/api/v1/models", {"name": "mm", "workspaceId": w.a})).is_success
    r = await w.call("POST", "/api/v1/models/mm/move", {"destinationWorkspaceId": w.b})
    assert r.status_code == expect(w, False), r.text


async def test_continuing_takes_creating_experiments_where_it_lives(world: World) -> None:
    w = world
    r = await w.call("POST", "/api/v1/experiments",
                     {"config": exp_yaml("c", ("A", "pA")), "activate": False})  # fmt: skip
    assert r.status_code == 200, r.text
    exp_id = r.json()["experiment"]["id"]
    assert (await w.call("POST", f"/api/v1/experiments/{exp_id}/kill")).status_code == 200
    # Now a Viewer of A (an Editor of B): she may create experiments, but not where it lives.
    await _assign(w.m, w.alice_id, EDITOR, w.a, remove=True)
    await _assign(w.m, w.alice_id, VIEWER, w.a)
    await _assign(w.m, w.alice_id, VIEWER, w.b, remove=True)
    await _assign(w.m, w.alice_id, EDITOR, w.b)
    r = await w.call("POST", "/api/v1/experiments/continue", {"id": exp_id})
    assert r.status_code == expect(w, False), r.text
    if w.rbac:  # (without RBAC it was continued already)
        await _assign(w.m, w.alice_id, EDITOR, w.a)
        r = await w.call("POST", "/api/v1/experiments/continue", {"id": exp_id})
        assert r.status_code == 200, r.text
