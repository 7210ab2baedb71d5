"""RP-workspace bindings and workspace slot quotas over the API, on SQLite and PostgreSQL: the
binding endpoints in the shapes the 0.38.1 client sends, who may change them, bad input, work
refused in a pool bound to other workspaces, and the workspace's default pools."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from controlplane.app import create_app
from tests.conftest import PASSWORD, Master, make_settings
from tests.controlplane.api.test_bad_input import assert_error
from tests.support.db_template import migrated

POOLS = [{"pool_name": "default"}, {"pool_name": "gpu"}, {"pool_name": "spare"}]
EXP = "name: e\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n"
BINDINGS = "/api/v1/resource-pools/{}/workspace-bindings"


@pytest.fixture
async def master(db_url: str, tmp_path: Path) -> AsyncIterator[Master]:
    """A master with three pools (default, gpu, spare) and a second user, alice."""
    await migrated(db_url)
    app = create_app(make_settings(db_url, tmp_path, resource_pools=POOLS), announce=lambda _: None)
    async with AsyncTestClient(app=app, base_url="http://127.0.0.1") as client:
        m = Master(client=client, admin={}, user={})
        m.admin = await m.login("admin")
        m.user = await m.login("determined")
        r = await client.post(
            "/api/v1/users",
            json={"user": {"username": "alice", "active": True}, "password": PASSWORD},
            headers=m.admin,
        )
        assert r.status_code == 200, r.text
        yield m


async def workspace(m: Master, name: str, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    r = await m.client.post("/api/v1/workspaces", json={"name": name, **body}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["workspace"]


async def project_in(m: Master, ws_id: int, headers: dict[str, str]) -> int:
    r = await m.client.post(
        f"/api/v1/workspaces/{ws_id}/projects", json={"name": f"p{ws_id}"}, headers=headers
    )
    assert r.status_code == 200, r.text
    return int(r.json()["project"]["id"])


async def bind(m: Master, verb: str, pool: str, headers: dict[str, str], **body: Any) -> Any:
    # As the 0.38.1 client sends it: the pool's name repeated in the body.
    return await m.client.request(
        verb, BINDINGS.format(pool), json={"resourcePoolName": pool, **body}, headers=headers
    )


async def bound(m: Master, pool: str, query: str = "") -> dict[str, Any]:
    r = await m.client.get(BINDINGS.format(pool) + query, headers=m.user)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def available(m: Master, ws_id: int) -> list[str]:
    r = await m.client.get(f"/api/v1/workspaces/{ws_id}/available-resource-pools", headers=m.user)
    assert r.status_code == 200, r.text
    return list(r.json()["resourcePools"])


async def pool_list(m: Master, query: str) -> list[str]:
    r = await m.client.get(f"/api/v1/resource-pools?{query}", headers=m.user)
    assert r.status_code == 200, r.text
    return [p["name"] for p in r.json()["resourcePools"]]


async def experiment(m: Master, project: int, config: str = EXP) -> Any:
    return await m.client.post(
        "/api/v1/experiments",
        json={"config": config, "activate": False, "projectId": project},
        headers=m.user,
    )


async def test_bind_list_overwrite_unbind(master: Master) -> None:
    a = await workspace(master, "team-a", master.user)
    b = await workspace(master, "team-b", master.user)
    c = await workspace(master, "team-c", master.user)
    assert await bound(master, "gpu") == {
        "workspaceIds": [],
        "pagination": {"offset": 0, "limit": -1, "startIndex": 0, "endIndex": 0, "total": 0},
    }
    r = await bind(master, "POST", "gpu", master.admin, workspaceNames=["team-a"])
    assert r.status_code == 200 and r.json() == {}, r.text
    r = await bind(master, "POST", "gpu", master.admin, workspaceIds=[b["id"]])
    assert r.status_code == 200, r.text
    assert (await bound(master, "gpu"))["workspaceIds"] == [a["id"], b["id"]]
    page = await bound(master, "gpu", "?offset=1&limit=1")
    assert page["workspaceIds"] == [b["id"]]
    assert page["pagination"] == {
        "offset": 1,
        "limit": 1,
        "startIndex": 1,
        "endIndex": 2,
        "total": 2,
    }
    # A bound pool is available to its workspaces only; unbound pools to everyone.
    assert await available(master, a["id"]) == ["default", "gpu", "spare"]
    assert await available(master, c["id"]) == ["default", "spare"]
    assert await available(master, 1) == ["default", "spare"]
    assert await pool_list(master, "unbound=true") == ["default", "spare"]
    assert await pool_list(master, f"workspaceId={c['id']}") == ["default", "spare"]
    assert await pool_list(master, f"workspaceId={a['id']}") == ["default", "gpu", "spare"]
    assert await pool_list(master, "") == ["default", "gpu", "spare"]

    r = await bind(master, "PUT", "gpu", master.admin, workspaceNames=["team-c"])
    assert r.status_code == 200, r.text
    assert (await bound(master, "gpu"))["workspaceIds"] == [c["id"]]
    r = await bind(master, "DELETE", "gpu", master.admin, workspaceNames=["team-c"])
    assert r.status_code == 200, r.text
    assert (await bound(master, "gpu"))["workspaceIds"] == []
    assert await available(master, a["id"]) == ["default", "gpu", "spare"]
    # Overwriting with no workspace opens the pool to all.
    await bind(master, "POST", "spare", master.admin, workspaceIds=[a["id"]])
    r = await bind(master, "PUT", "spare", master.admin, workspaceIds=[])
    assert r.status_code == 200, r.text
    assert (await bound(master, "spare"))["workspaceIds"] == []


async def test_only_an_admin_changes_bindings(master: Master) -> None:
    alice = await master.login("alice")
    mine = await workspace(master, "mine", master.user)
    for who in (master.user, alice):  # the workspace's owner, and another user
        for verb in ("POST", "PUT", "DELETE"):
            r = await bind(master, verb, "gpu", who, workspaceIds=[mine["id"]])
            assert_error(r, 403, "admin")
    assert (await bound(master, "gpu"))["workspaceIds"] == []
    r = await bind(master, "POST", "gpu", master.admin, workspaceIds=[mine["id"]])
    assert r.status_code == 200, r.text
    # Reading is open to every user.
    r = await master.client.get(BINDINGS.format("gpu"), headers=alice)
    assert r.status_code == 200 and r.json()["workspaceIds"] == [mine["id"]]


@pytest.mark.parametrize(
    ("verb", "pool", "body", "status", "needle"),
    [
        ("POST", "nope", {"workspaceIds": [1]}, 404, "'nope' does not exist"),
        ("DELETE", "nope", {"workspaceIds": [1]}, 404, "'nope' does not exist"),
        ("PUT", "nope", {"workspaceIds": [1]}, 404, "'nope' does not exist"),
        ("POST", "gpu", {"workspaceIds": [999]}, 404, "workspaces not found: 999"),
        ("POST", "gpu", {"workspaceNames": ["ghost"]}, 404, "'ghost'"),
        ("POST", "gpu", {}, 400, "at least one workspace"),
        ("POST", "default", {"workspaceIds": [1]}, 400, "default pool"),
        ("PUT", "default", {"workspaceIds": [1]}, 400, "default pool"),
        ("DELETE", "gpu", {"workspaceIds": [1]}, 404, "not bound"),
        ("POST", "gpu", {"workspaceIds": "1"}, 400, ""),
        ("POST", "gpu", {"workspaceIds": [True]}, 400, ""),
        ("POST", "gpu", {"workspaceIds": ["1"]}, 400, ""),
        ("POST", "gpu", {"workspaceIds": [0]}, 400, ""),
        ("POST", "gpu", {"workspaceIds": [2**31]}, 400, ""),
        ("POST", "gpu", {"workspaceNames": [7]}, 400, ""),
        ("POST", "gpu", {"workspaceNames": ["x" * 5000]}, 400, ""),
    ],
)
async def test_bad_binding_requests(
    master: Master, verb: str, pool: str, body: dict[str, Any], status: int, needle: str
) -> None:
    r = await master.client.request(verb, BINDINGS.format(pool), json=body, headers=master.admin)
    assert_error(r, status, needle)
    assert (await bound(master, "gpu"))["workspaceIds"] == []


async def test_a_second_bind_and_a_mismatched_pool_name_are_refused(master: Master) -> None:
    r = await bind(master, "POST", "gpu", master.admin, workspaceIds=[1])
    assert r.status_code == 200, r.text
    assert_error(await bind(master, "POST", "gpu", master.admin, workspaceIds=[1]), 409, "already")
    r = await master.client.post(
        BINDINGS.format("gpu"),
        json={"resourcePoolName": "spare", "workspaceIds": [1]},
        headers=master.admin,
    )
    assert_error(r, 400, "does not match")
    for path in (BINDINGS.format("nope"), "/api/v1/workspaces/999/available-resource-pools"):
        assert_error(await master.client.get(path, headers=master.user), 404)
    r = await master.client.get("/api/v1/resource-pools?workspaceId=999", headers=master.user)
    assert_error(r, 404)


async def test_work_is_refused_in_a_pool_bound_to_other_workspaces(master: Master) -> None:
    a = await workspace(master, "team-a", master.user)
    b = await workspace(master, "team-b", master.user)
    await bind(master, "POST", "gpu", master.admin, workspaceIds=[a["id"]])
    in_a, in_b = (
        await project_in(master, a["id"], master.user),
        await project_in(master, b["id"], master.user),
    )
    gpu = EXP + "resources:\n  resource_pool: gpu\n"
    r = await experiment(master, in_b, gpu)
    assert_error(r, 400, "resource pool 'gpu' is not bound to workspace 'team-b'")
    r = await experiment(master, in_a, gpu)
    assert r.status_code == 200, r.text
    exp_a = r.json()["experiment"]
    assert exp_a["resourcePool"] == "gpu"
    # Commands, notebooks and the rest: the same rule.
    cmd = {"entrypoint": ["true"], "resources": {"resource_pool": "gpu"}}
    r = await master.client.post(
        "/api/v1/commands", json={"config": cmd, "workspaceId": b["id"]}, headers=master.user
    )
    assert_error(r, 400, "not bound to workspace 'team-b'")
    r = await master.client.post(
        "/api/v1/commands", json={"config": cmd, "workspaceId": a["id"]}, headers=master.user
    )
    assert r.status_code == 200, r.text
    # A job of team-b moved to the pool, or team-a's experiment moved to team-b: refused.
    r = await experiment(master, in_b)
    job_b = r.json()["experiment"]["jobId"]
    r = await master.client.post(
        "/api/v1/job-queues",
        json={"updates": [{"jobId": job_b, "resourcePool": "gpu"}]},
        headers=master.user,
    )
    assert_error(r, 400, "not bound to workspace 'team-b'")
    r = await master.client.post(
        f"/api/v1/experiments/{exp_a['id']}/move",
        json={"destinationProjectId": in_b},
        headers=master.user,
    )
    assert_error(r, 400, "not bound to workspace 'team-b'")
    r = await master.client.post(
        f"/api/v1/projects/{in_a}/move",
        json={"destinationWorkspaceId": b["id"]},
        headers=master.user,
    )
    assert_error(r, 400, "not bound to workspace 'team-b'")


async def test_a_workspaces_default_pools(master: Master) -> None:
    a = await workspace(master, "team-a", master.user)
    await bind(master, "POST", "gpu", master.admin, workspaceIds=[a["id"]])
    # A default must be a pool the workspace may use.
    r = await master.client.post(
        "/api/v1/workspaces",
        json={"name": "team-b", "defaultComputePool": "gpu"},
        headers=master.user,
    )
    assert_error(r, 400, "not bound to workspace 'team-b'")
    r = await master.client.post(
        "/api/v1/workspaces", json={"name": "team-b", "defaultAuxPool": "nope"}, headers=master.user
    )
    assert_error(r, 400, "'nope' does not exist")
    # The names `det workspace edit` (0.38.1) sends.
    r = await master.client.patch(
        f"/api/v1/workspaces/{a['id']}",
        json={"defaultComputeResourcePool": "gpu", "defaultAuxResourcePool": "spare"},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    got = r.json()["workspace"]
    assert (got["defaultComputePool"], got["defaultAuxPool"]) == ("gpu", "spare")
    project = await project_in(master, a["id"], master.user)
    r = await experiment(master, project)
    assert r.status_code == 200 and r.json()["experiment"]["resourcePool"] == "gpu", r.text
    r = await experiment(master, project, EXP + "resources:\n  slots_per_trial: 0\n")
    assert r.status_code == 200 and r.json()["experiment"]["resourcePool"] == "spare", r.text
    r = await experiment(master, project, EXP + "resources:\n  resource_pool: default\n")
    assert r.json()["experiment"]["resourcePool"] == "default", r.text
    for slots, pool in ((1, "gpu"), (0, "spare")):
        r = await master.client.post(
            "/api/v1/commands",
            json={
                "config": {"entrypoint": ["true"], "resources": {"slots": slots}},
                "workspaceId": a["id"],
            },
            headers=master.user,
        )
        assert r.status_code == 200, r.text
        assert r.json()["command"]["resourcePool"] == pool


async def test_slot_quotas_on_the_workspace(master: Master) -> None:
    alice = await master.login("alice")
    a = await workspace(master, "team-a", master.user)
    assert a["slotQuotas"] == {}
    path = f"/api/v1/workspaces/{a['id']}"
    r = await master.client.patch(path, json={"slotQuotas": {"gpu": 8}}, headers=master.admin)
    assert r.status_code == 200 and r.json()["workspace"]["slotQuotas"] == {"gpu": 8}, r.text
    r = await master.client.patch(path, json={"slotQuotas": {"default": 2}}, headers=master.admin)
    assert r.json()["workspace"]["slotQuotas"] == {"default": 2, "gpu": 8}
    # Only an admin sets them: not the workspace's owner, nor anyone else.
    for who in (master.user, alice):
        r = await master.client.patch(path, json={"slotQuotas": {"gpu": 100}}, headers=who)
        assert_error(r, 403, "admin")
    r = await master.client.post(
        "/api/v1/workspaces", json={"name": "x", "slotQuotas": {"gpu": 1}}, headers=master.user
    )
    assert_error(r, 403, "admin")
    for bad in (-1, "8", True, 1.5, 2**31, [], {"n": 1}):
        r = await master.client.patch(path, json={"slotQuotas": {"gpu": bad}}, headers=master.admin)
        assert_error(r, 400)
    r = await master.client.patch(path, json={"slotQuotas": {"nope": 1}}, headers=master.admin)
    assert_error(r, 400, "'nope' does not exist")
    r = await master.client.patch(path, json={"slotQuotas": "8"}, headers=master.admin)
    assert_error(r, 400)
    # Other edits leave them; null removes one.
    r = await master.client.patch(path, json={"name": "team-a2"}, headers=master.user)
    assert r.json()["workspace"]["slotQuotas"] == {"default": 2, "gpu": 8}
    r = await master.client.patch(path, json={"slotQuotas": {"gpu": None}}, headers=master.admin)
    assert r.json()["workspace"]["slotQuotas"] == {"default": 2}
    r = await master.client.get(path, headers=alice)
    assert r.json()["workspace"]["slotQuotas"] == {"default": 2}
    made = await workspace(master, "team-z", master.admin, slotQuotas={"spare": 0})
    assert made["slotQuotas"] == {"spare": 0}
