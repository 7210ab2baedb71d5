"""Determined 0.38's bulk experiment actions under a project
(`POST /api/v1/projects/{id}/experiments/{verb}`): they act on the named experiments or the
filter's matches in that project only, each experiment's result says what happened to it, and
another user's experiment is refused per experiment, not as a whole."""

from __future__ import annotations

from tests.conftest import Master
from tests.controlplane.services.scheduling.conftest import experiment_yaml


async def _experiment(master: Master, headers: dict[str, str], name: str, project: int) -> int:
    r = await master.client.post(
        "/api/v1/experiments",
        headers=headers,
        json={"config": experiment_yaml(name), "activate": False, "projectId": project},
    )
    assert r.status_code == 200, r.text
    return r.json()["experiment"]["id"]


async def _state(master: Master, exp: int) -> str:
    r = await master.client.get(f"/api/v1/experiments/{exp}", headers=master.admin)
    return r.json()["experiment"]["state"]


async def _project(master: Master) -> int:
    r = await master.client.post("/api/v1/workspaces", headers=master.admin, json={"name": "w"})
    ws = r.json()["workspace"]["id"]
    r = await master.client.post(
        f"/api/v1/workspaces/{ws}/projects", headers=master.admin,
        json={"name": "other", "workspaceId": ws},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    return r.json()["project"]["id"]


async def test_ids_act_only_inside_the_project(master: Master) -> None:
    other = await _project(master)
    a = await _experiment(master, master.user, "a", 1)
    b = await _experiment(master, master.admin, "b", 1)
    c = await _experiment(master, master.user, "c", other)
    r = await master.client.post(
        "/api/v1/projects/1/experiments/activate",
        headers=master.user,
        json={"experimentIds": [a, b, c], "projectId": 1},
    )
    assert r.status_code == 200, r.text
    results = {x["id"]: x["error"] for x in r.json()["results"]}
    assert results[a] == ""
    assert "owner" in results[b]  # the admin's: refused for this user, alone
    assert "not in project 1" in results[c]
    assert await _state(master, a) != "STATE_PAUSED"  # active (QUEUED until it runs)
    assert await _state(master, b) == "STATE_PAUSED"
    assert await _state(master, c) == "STATE_PAUSED"


async def test_filters_match_inside_the_project(master: Master) -> None:
    other = await _project(master)
    mine = [await _experiment(master, master.admin, f"m{i}", 1) for i in range(2)]
    elsewhere = await _experiment(master, master.admin, "x", other)
    r = await master.client.post(
        "/api/v1/projects/1/experiments/activate",
        headers=master.admin,
        json={"filters": {"states": ["STATE_PAUSED"]}},
    )
    assert r.status_code == 200, r.text
    assert sorted(x["id"] for x in r.json()["results"]) == sorted(mine)
    assert await _state(master, elsewhere) == "STATE_PAUSED"
    r = await master.client.post(
        "/api/v1/projects/1/experiments/pause",
        headers=master.admin,
        json={"experimentIds": mine},
    )
    assert all(x["error"] == "" for x in r.json()["results"])


async def test_move_and_bad_input(master: Master) -> None:
    other = await _project(master)
    a = await _experiment(master, master.admin, "a", 1)
    r = await master.client.post(
        "/api/v1/projects/1/experiments/move",
        headers=master.admin,
        json={"experimentIds": [a], "destinationProjectId": other},
    )
    assert r.status_code == 200 and r.json()["results"] == [{"error": "", "id": a}]
    r = await master.client.get(f"/api/v1/experiments/{a}", headers=master.admin)
    assert r.json()["experiment"]["projectId"] == other
    for path, body, status in (
        ("/api/v1/projects/1/experiments/pause", {"experimentIds": [a], "projectId": 2}, 400),
        ("/api/v1/projects/1/experiments/pause", {}, 400),
        ("/api/v1/projects/1/experiments/pause", {"experimentIds": ["x"]}, 400),
        ("/api/v1/projects/99999999999/experiments/pause", {"experimentIds": [a]}, 400),
        ("/api/v1/projects/1/experiments/move", {"experimentIds": [a]}, 404),
    ):
        r = await master.client.post(path, headers=master.admin, json=body)
        assert r.status_code == status, (path, body, r.text)
    r = await master.client.post(
        "/api/v1/projects/1/experiments/pause", json={"experimentIds": [a]}
    )
    assert r.status_code == 401
