"""Projects by key, project notes (add, replace; owner or admin only) and run-metadata values
across a project's runs."""

from __future__ import annotations

from tests.conftest import Master
from tests.controlplane.api.test_trials_api import _trial


async def _project(master: Master, headers: dict[str, str]) -> dict:
    r = await master.client.post("/api/v1/workspaces", headers=headers, json={"name": "nw"})
    ws = r.json()["workspace"]["id"]
    r = await master.client.post(
        f"/api/v1/workspaces/{ws}/projects", headers=headers,
        json={"name": "noted", "workspaceId": ws, "key": "NOTE"},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    return r.json()["project"]


async def test_notes_by_owner_and_admin_only(master: Master) -> None:
    p = await _project(master, master.user)
    url = f"/api/v1/projects/{p['id']}/notes"
    r = await master.client.post(url, headers=master.user, json={"name": "plan", "contents": "a"})
    assert r.status_code == 200, r.text
    assert r.json()["notes"] == [{"name": "plan", "contents": "a"}]
    r = await master.client.post(url, headers=master.admin, json={"name": "b", "contents": "b"})
    assert [n["name"] for n in r.json()["notes"]] == ["plan", "b"]
    r = await master.client.put(
        url, headers=master.user, json={"notes": [{"name": "only", "contents": "x"}]}
    )
    assert r.json()["notes"] == [{"name": "only", "contents": "x"}]
    r = await master.client.get(f"/api/v1/projects/{p['id']}", headers=master.user)
    assert r.json()["project"]["notes"] == [{"name": "only", "contents": "x"}]

    other = await _project_of_admin(master)
    r = await master.client.post(
        f"/api/v1/projects/{other}/notes", headers=master.user, json={"name": "n", "contents": "c"}
    )
    assert r.status_code == 403
    for body in ({"name": "a\x00", "contents": ""}, {"name": 5, "contents": ""}, {}):
        r = await master.client.post(url, headers=master.user, json=body)
        assert r.status_code == 400, (body, r.text)
    r = await master.client.put(url, headers=master.user, json={"notes": [], "projectId": 999})
    assert r.status_code == 400
    r = await master.client.post(
        "/api/v1/projects/987654/notes", headers=master.admin, json={"name": "n", "contents": ""}
    )
    assert r.status_code == 404


async def _project_of_admin(master: Master) -> int:
    r = await master.client.post("/api/v1/workspaces", headers=master.admin, json={"name": "aw"})
    ws = r.json()["workspace"]["id"]
    r = await master.client.post(
        f"/api/v1/workspaces/{ws}/projects", headers=master.admin,
        json={"name": "adm", "workspaceId": ws},
    )  # fmt: skip
    return r.json()["project"]["id"]


async def test_project_by_key(master: Master) -> None:
    p = await _project(master, master.user)
    r = await master.client.get("/api/v1/projects/key/NOTE", headers=master.user)
    assert r.status_code == 200 and r.json()["project"]["id"] == p["id"]
    r = await master.client.get("/api/v1/projects/key/NOPE", headers=master.user)
    assert r.status_code == 404
    r = await master.client.get("/api/v1/projects/key/" + "K" * 40, headers=master.user)
    assert r.status_code == 400


async def test_metadata_values(master: Master) -> None:
    t = await _trial(master)
    for value in ({"env": {"gpu": "a100"}, "lr": 0.1}, {"env": {"gpu": "h100"}}):
        r = await master.client.post(
            f"/api/v1/runs/{t['id']}/metadata", headers=master.user, json={"metadata": value}
        )
        assert r.status_code == 200, r.text
    r = await master.client.get("/api/v1/projects/1/metadata/env.gpu", headers=master.user)
    assert r.status_code == 200, r.text
    assert r.json()["values"] == ["h100"]  # metadata merges: the newest value of the run
    r = await master.client.get("/api/v1/projects/1/metadata/lr", headers=master.user)
    assert r.json()["values"] == ["0.1"]
    r = await master.client.get("/api/v1/projects/1/metadata/none", headers=master.user)
    assert r.json()["values"] == []
    r = await master.client.get("/api/v1/projects/987654/metadata/lr", headers=master.user)
    assert r.status_code == 404
