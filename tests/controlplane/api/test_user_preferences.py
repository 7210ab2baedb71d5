"""What the UI remembers per user: settings, pins and recent projects are the caller's own
(another user never sees or changes them), unknown ids are 404, bad input 400."""

from __future__ import annotations

from tests.conftest import Master


async def test_settings_are_per_user_set_replaced_removed_and_reset(master: Master) -> None:
    r = await master.client.get("/api/v1/users/setting", headers=master.user)
    assert r.status_code == 200 and r.json()["settings"] == []
    body = {"settings": [
        {"key": "theme", "value": "dark", "storagePath": "global"},
        {"key": "columns", "value": '["id","name"]', "storagePath": "experiments-list"},
    ]}  # fmt: skip
    r = await master.client.post("/api/v1/users/setting", headers=master.user, json=body)
    assert r.status_code == 200, r.text
    body = {"settings": [{"key": "theme", "value": "light", "storagePath": "global"}]}
    await master.client.post("/api/v1/users/setting", headers=master.user, json=body)
    r = await master.client.get("/api/v1/users/setting", headers=master.user)
    got = {(s["storagePath"], s["key"]): s["value"] for s in r.json()["settings"]}
    assert got == {("global", "theme"): "light", ("experiments-list", "columns"): '["id","name"]'}
    # the admin's settings are the admin's
    r = await master.client.get("/api/v1/users/setting", headers=master.admin)
    assert r.json()["settings"] == []
    # an empty value removes a key; reset removes all
    body = {"settings": [{"key": "theme", "value": "", "storagePath": "global"}]}
    await master.client.post("/api/v1/users/setting", headers=master.user, json=body)
    r = await master.client.get("/api/v1/users/setting", headers=master.user)
    assert [s["key"] for s in r.json()["settings"]] == ["columns"]
    r = await master.client.post("/api/v1/users/setting/reset", headers=master.user)
    assert r.status_code == 200
    r = await master.client.get("/api/v1/users/setting", headers=master.user)
    assert r.json()["settings"] == []


async def test_bad_settings_are_a_400(master: Master) -> None:
    for setting in (
        {"key": "a\x00", "value": "v"},
        {"key": "k", "value": "x" * (64 * 1024 + 1)},
        {"key": "", "value": "v"},
        {"key": 5, "value": "v"},
    ):
        r = await master.client.post(
            "/api/v1/users/setting", headers=master.user, json={"settings": [setting]}
        )
        assert r.status_code == 400, (setting, r.text)
    r = await master.client.post("/api/v1/users/setting", headers=master.user, json={})
    assert r.status_code == 400


async def test_pins_are_per_user_and_shown_in_workspace_lists(master: Master) -> None:
    r = await master.client.post("/api/v1/workspaces", headers=master.user, json={"name": "team"})
    assert r.status_code == 200, r.text
    ws = r.json()["workspace"]["id"]
    r = await master.client.post(f"/api/v1/workspaces/{ws}/pin", headers=master.user)
    assert r.status_code == 200, r.text
    r = await master.client.get(f"/api/v1/workspaces/{ws}", headers=master.user)
    assert r.json()["workspace"]["pinned"] is True and r.json()["workspace"]["pinnedAt"]
    r = await master.client.get(f"/api/v1/workspaces/{ws}", headers=master.admin)
    assert r.json()["workspace"]["pinned"] is False
    r = await master.client.get(
        "/api/v1/workspaces", headers=master.user, params={"pinned": "true"}
    )
    assert [w["id"] for w in r.json()["workspaces"]] == [ws]
    r = await master.client.get(
        "/api/v1/workspaces", headers=master.admin, params={"pinned": "true"}
    )
    assert r.json()["workspaces"] == []
    await master.client.post(f"/api/v1/workspaces/{ws}/pin", headers=master.user)  # idempotent
    r = await master.client.post(f"/api/v1/workspaces/{ws}/unpin", headers=master.user)
    assert r.status_code == 200
    r = await master.client.get(
        "/api/v1/workspaces", headers=master.user, params={"pinned": "true"}
    )
    assert r.json()["workspaces"] == []
    for path in ("/api/v1/workspaces/987654/pin", "/api/v1/workspaces/987654/unpin"):
        assert (await master.client.post(path, headers=master.user)).status_code == 404
    r = await master.client.post("/api/v1/workspaces/99999999999/pin", headers=master.user)
    assert r.status_code == 400


async def test_recent_projects_are_the_callers_own_newest_first(master: Master) -> None:
    r = await master.client.post("/api/v1/workspaces", headers=master.user, json={"name": "w2"})
    ws = r.json()["workspace"]["id"]
    ids = []
    for name in ("p1", "p2"):
        r = await master.client.post(
            f"/api/v1/workspaces/{ws}/projects", headers=master.user,
            json={"name": name, "workspaceId": ws},
        )  # fmt: skip
        assert r.status_code == 200, r.text
        ids.append(r.json()["project"]["id"])
    for pid in (ids[0], ids[1], ids[0]):
        body = {"activityType": "ACTIVITY_TYPE_GET", "entityType": "ENTITY_TYPE_PROJECT",
                "entityId": pid}  # fmt: skip
        r = await master.client.post("/api/v1/users/activity", headers=master.user, json=body)
        assert r.status_code == 200, r.text
    r = await master.client.get("/api/v1/user/projects/activity", headers=master.user)
    assert [p["id"] for p in r.json()["projects"]] == [ids[0], ids[1]]
    r = await master.client.get(
        "/api/v1/user/projects/activity", headers=master.user, params={"limit": 1}
    )
    assert [p["id"] for p in r.json()["projects"]] == [ids[0]]
    r = await master.client.get("/api/v1/user/projects/activity", headers=master.admin)
    assert r.json()["projects"] == []
    bad = {"activityType": "ACTIVITY_TYPE_GET", "entityType": "ENTITY_TYPE_PROJECT",
           "entityId": 987654}  # fmt: skip
    r = await master.client.post("/api/v1/users/activity", headers=master.user, json=bad)
    assert r.status_code == 404
    bad = {"activityType": "DELETE", "entityType": "ENTITY_TYPE_PROJECT", "entityId": ids[0]}
    r = await master.client.post("/api/v1/users/activity", headers=master.user, json=bad)
    assert r.status_code == 400
    r = await master.client.get(
        "/api/v1/user/projects/activity", headers=master.user, params={"limit": 1000}
    )
    assert r.status_code == 400
