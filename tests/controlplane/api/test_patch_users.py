"""Activating and deactivating many users at once (PatchUsers, the web UI's user table):
admins only, one result per user, an admin cannot deactivate themselves, a deactivated user's
sessions end."""

from __future__ import annotations

from cli.auth import hash_password
from tests.conftest import PASSWORD, Master


async def _user(master: Master, name: str) -> int:
    r = await master.client.post(
        "/api/v1/users", headers=master.admin,
        json={"user": {"username": name, "active": True}, "password": hash_password(PASSWORD),
              "isHashed": True},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    return r.json()["user"]["id"]


async def test_bulk_deactivate_and_activate(master: Master) -> None:
    a, b = await _user(master, "bulk-a"), await _user(master, "bulk-b")
    a_headers = await master.login("bulk-a")
    me = (await master.client.get("/api/v1/me", headers=master.admin)).json()["user"]["id"]
    r = await master.client.patch(
        "/api/v1/users", headers=master.admin,
        json={"userIds": [a, b, me, 987654], "activate": False},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    results = {x["id"]: x["error"] for x in r.json()["results"]}
    assert results[a] == "" and results[b] == ""
    assert "themselves" in results[me] and "not found" in results[987654]
    assert (await master.client.get("/api/v1/me", headers=a_headers)).status_code == 401
    r = await master.client.patch(
        "/api/v1/users", headers=master.admin,
        json={"userIds": [], "activate": True, "filters": {"name": "BULK-"}},
    )  # fmt: skip
    assert sorted(x["id"] for x in r.json()["results"]) == [a, b]
    assert (await master.client.get(f"/api/v1/users/{a}", headers=master.admin)).json()["user"][
        "active"
    ]


async def test_only_admins_and_bad_input(master: Master) -> None:
    r = await master.client.patch(
        "/api/v1/users", headers=master.user, json={"userIds": [1], "activate": False}
    )
    assert r.status_code == 403
    for body in ({"userIds": [1]}, {"activate": True}, {"userIds": ["x"], "activate": True},
                 {"userIds": [2**40], "activate": True}):  # fmt: skip
        r = await master.client.patch("/api/v1/users", headers=master.admin, json=body)
        assert r.status_code == 400, (body, r.text)
