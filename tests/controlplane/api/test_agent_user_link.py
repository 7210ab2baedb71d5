"""Linking a user with a Unix user on the agents (Determined's `det user link-with-agent-user`:
PATCH /api/v1/users/{id} with agentUserGroup): admin only, all four fields or none."""

from __future__ import annotations

from typing import Any

from tests.conftest import Master

LINK = {"agentUid": 61001, "agentGid": 61000, "agentUser": "alice", "agentGroup": "ml"}


async def _user(master: Master, name: str) -> dict[str, Any]:
    r = await master.client.get(f"/api/v1/users/{name}/by-username", headers=master.admin)
    assert r.status_code == 200, r.text
    return r.json()["user"]


async def _patch(master: Master, user_id: int, body: Any, headers: dict[str, str]) -> Any:
    return await master.client.patch(f"/api/v1/users/{user_id}", json=body, headers=headers)


async def test_admin_links_and_unlinks_a_user(master: Master) -> None:
    user = await _user(master, "determined")
    assert user["agentUserGroup"] is None  # unlinked: the default task user applies
    r = await _patch(master, user["id"], {"agentUserGroup": LINK}, master.admin)
    assert r.status_code == 200, r.text
    assert r.json()["user"]["agentUserGroup"] == LINK
    assert (await _user(master, "determined"))["agentUserGroup"] == LINK
    listed = (await master.client.get("/api/v1/users", headers=master.admin)).json()["users"]
    assert next(u for u in listed if u["username"] == "determined")["agentUserGroup"] == LINK

    # Other changes leave the link alone; null leaves it too; {} unlinks.
    r = await _patch(master, user["id"], {"displayName": "D", "agentUserGroup": None}, master.admin)
    assert r.status_code == 200 and r.json()["user"]["agentUserGroup"] == LINK
    r = await _patch(master, user["id"], {"agentUserGroup": {}}, master.admin)
    assert r.status_code == 200 and r.json()["user"]["agentUserGroup"] is None

    # Root only by an explicit link.
    root = {"agentUid": 0, "agentGid": 0, "agentUser": "root", "agentGroup": "root"}
    r = await _patch(master, user["id"], {"agentUserGroup": root}, master.admin)
    assert r.status_code == 200 and r.json()["user"]["agentUserGroup"] == root


async def test_only_an_admin_links(master: Master) -> None:
    me = await _user(master, "determined")
    r = await _patch(master, me["id"], {"agentUserGroup": LINK}, master.user)
    assert r.status_code == 403, r.text
    # Refused before anything else in the request changed.
    r = await _patch(
        master, me["id"], {"displayName": "changed", "agentUserGroup": LINK}, master.user
    )
    assert r.status_code == 403
    after = await _user(master, "determined")
    assert after["agentUserGroup"] is None and after["displayName"] != "changed"
    admin = await _user(master, "admin")
    r = await _patch(master, admin["id"], {"agentUserGroup": LINK}, master.user)
    assert r.status_code == 403


async def test_a_link_needs_all_four_valid_fields(master: Master) -> None:
    user = await _user(master, "determined")
    partial = {"agentUid": 61001, "agentUser": "alice"}
    r = await _patch(master, user["id"], {"agentUserGroup": partial}, master.admin)
    assert r.status_code == 400 and "agentUid, agentGid, agentUser and agentGroup" in r.text
    for bad in (
        {**LINK, "agentUid": -1},
        {**LINK, "agentGid": 2**32},
        {**LINK, "agentUser": "a b"},
        {**LINK, "agentGroup": "../x"},
        {**LINK, "agentUser": ""},
        {**LINK, "agentUid": "61001x"},
    ):
        r = await _patch(master, user["id"], {"agentUserGroup": bad}, master.admin)
        assert r.status_code == 400, (bad, r.text)
    assert (await _user(master, "determined"))["agentUserGroup"] is None
