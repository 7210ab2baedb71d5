"""The audit log (`GET /api/v1/master/audit`): admins' changes to other users' objects, to
users, groups and roles are recorded with who, what, outcome, time and address; only admins
read it; bad filters are a 400. RBAC off (the default): today's rules are unchanged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cli.auth import hash_password
from tests.conftest import PASSWORD, Master
from tests.controlplane.services.scheduling.conftest import experiment_yaml


async def _user(master: Master, name: str) -> tuple[int, dict[str, str]]:
    r = await master.client.post(
        "/api/v1/users",
        headers=master.admin,
        json={"user": {"username": name, "active": True}, "password": hash_password(PASSWORD),
              "isHashed": True},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    return r.json()["user"]["id"], await master.login(name)


async def _audit(master: Master, headers: dict[str, str] | None = None, **params: object):  # type: ignore[no-untyped-def]
    return await master.client.get(
        "/api/v1/master/audit", params=params, headers=headers or master.admin
    )


async def test_an_admin_changing_bobs_experiment_is_recorded_and_bob_cannot_read_the_log(
    master: Master,
) -> None:
    before = datetime.now(UTC) - timedelta(seconds=5)
    _, bob = await _user(master, "bob")
    r = await master.client.post(
        "/api/v1/experiments", headers=bob, json={"config": experiment_yaml("b"), "activate": False}
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]["id"]
    # bob changing his own experiment is not an audited change
    r = await master.client.patch(f"/api/v1/experiments/{exp}", headers=bob, json={"notes": "mine"})
    assert r.status_code == 200, r.text
    r = await master.client.patch(
        f"/api/v1/experiments/{exp}", headers=master.admin, json={"notes": "by admin"}
    )
    assert r.status_code == 200, r.text

    r = await _audit(master, action="PATCH /api/v1/experiments/{experiment_id:int}")
    assert r.status_code == 200, r.text
    entries = r.json()["entries"]
    assert len(entries) == 1, entries
    e = entries[0]
    assert e["actor"] == "admin" and e["outcome"] == "ok" and e["status"] == 200
    assert e["targets"] == {"experiment_id": str(exp)}
    assert e["path"] == f"/api/v1/experiments/{exp}"
    assert e["clientAddress"]
    assert datetime.fromisoformat(e["time"]) >= before

    assert (await _audit(master, bob)).status_code == 403


async def test_an_admins_own_creations_are_not_recorded_but_bulk_changes_are(
    master: Master,
) -> None:
    """What an admin creates is the admin's own: no entry (and no INSERT on every submission);
    a bulk change names other users' objects in its body, so it is recorded."""
    r = await master.client.post(
        "/api/v1/experiments",
        headers=master.admin,
        json={"config": experiment_yaml("a"), "activate": False},
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]["id"]
    r = await master.client.post(
        "/api/v1/commands", headers=master.admin, json={"config": {"entrypoint": ["true"]}}
    )
    assert r.status_code == 200, r.text
    r = await master.client.post(
        "/api/v1/experiments/archive", headers=master.admin, json={"experimentIds": [exp]}
    )
    assert r.status_code == 200, r.text
    entries = (await _audit(master)).json()["entries"]
    assert [(e["method"], e["route"]) for e in entries] == [
        ("POST", "/api/v1/experiments/archive")
    ], entries


async def test_users_groups_roles_and_refused_attempts_are_recorded(master: Master) -> None:
    bob_id, bob = await _user(master, "bob")
    r = await master.client.post(
        "/api/v1/groups", headers=master.admin, json={"name": "team", "addUsers": [bob_id]}
    )
    assert r.status_code == 200, r.text
    group = r.json()["group"]["groupId"]
    r = await master.client.post(
        "/api/v1/roles/add-assignments",
        headers=master.admin,
        json={
            "groupRoleAssignments": [{"groupId": group, "roleAssignment": {"role": {"roleId": 4}}}]
        },
    )
    assert r.status_code == 200, r.text
    # bob tries to make himself a group: refused, and recorded as refused
    r = await master.client.post("/api/v1/groups", headers=bob, json={"name": "mine"})
    assert r.status_code == 403
    # a change that fails is recorded with its outcome, and changes nothing
    r = await master.client.post("/api/v1/groups", headers=master.admin, json={"name": "team"})
    assert r.status_code == 409

    entries = (await _audit(master)).json()["entries"]
    seen = [(e["actor"], e["action"], e["outcome"]) for e in entries]
    assert seen[:5] == [
        ("admin", "POST /api/v1/groups", "conflict"),
        ("bob", "POST /api/v1/groups", "denied"),
        ("admin", "POST /api/v1/roles/add-assignments", "ok"),
        ("admin", "POST /api/v1/groups", "ok"),
        ("admin", "POST /api/v1/users", "ok"),
    ]
    assign = entries[2]["targets"]["assignments"]
    assert assign == [{"role_id": 4, "group_id": group}]
    assert entries[3]["targets"]["group_id"] == group
    # filters: by actor, by method, since
    assert {e["actor"] for e in (await _audit(master, actor="bob")).json()["entries"]} == {"bob"}
    later = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    assert (await _audit(master, since=later)).json()["entries"] == []
    page = (await _audit(master, limit=1, offset=1)).json()
    assert len(page["entries"]) == 1 and page["pagination"]["total"] >= 5


async def test_bad_filters_are_a_400(master: Master) -> None:
    for params in ({"limit": -1}, {"limit": 0}, {"offset": -5}, {"since": "yesterday"},
                   {"since": "2026-01-01T00:00:00"}):  # fmt: skip
        r = await _audit(master, **params)
        assert r.status_code == 400, (params, r.text)


async def test_an_admin_protecting_bobs_checkpoint_is_recorded(master: Master) -> None:
    """The checkpoint's owner is its trial's experiment's: an admin's change is to bob's."""
    _, bob = await _user(master, "bob")
    r = await master.client.post(
        "/api/v1/experiments", headers=bob, json={"config": experiment_yaml("b"), "activate": False}
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]["id"]
    r = await master.client.get(f"/api/v1/experiments/{exp}/trials", headers=bob)
    trial = r.json()["trials"][0]["id"]
    ckpt = "5f0c6a53-0f32-4b0a-9d4e-4c1f2ad8e001"
    body = {"uuid": ckpt, "resources": {"a": 1}, "training": {"trialId": trial}}
    r = await master.client.post("/api/v1/checkpoints", json=body, headers=master.admin)
    assert r.status_code == 200, r.text
    route = "/api/v1/checkpoints/{checkpoint_uuid:str}/protection"
    # bob protecting his own is not audited; the admin changing bob's is
    for who in (bob, master.admin):
        r = await master.client.put(
            f"/api/v1/checkpoints/{ckpt}/protection", json={"protected": True}, headers=who
        )
        assert r.status_code == 200, r.text
    entries = (await _audit(master, action=f"PUT {route}")).json()["entries"]
    assert [(e["actor"], e["outcome"], e["targets"]) for e in entries] == [
        ("admin", "ok", {"checkpoint_uuid": ckpt})
    ]


async def test_an_audited_route_naming_a_huge_id_is_a_400_not_a_500(master: Master) -> None:
    """The audit log looks up the owner of what the path names before the route validates
    it: a 400-digit id must not reach the database driver."""
    huge = "9" * 400
    for method, path in (("PATCH", f"/api/v1/experiments/{huge}"),
                         ("POST", f"/api/v1/experiments/-{huge}/pause"),
                         ("POST", f"/api/v1/projects/{huge}/archive")):  # fmt: skip
        r = await master.client.request(method, path, json={}, headers=master.admin)
        assert r.status_code == 400, (path, r.status_code, r.text[:200])


async def test_a_refused_change_naming_a_nul_is_recorded_not_a_500(master: Master) -> None:
    """PostgreSQL's text and JSONB refuse NUL: the entry keeps U+FFFD in its place."""
    r = await master.client.post("/api/v1/agents/a%00b/enable", headers=master.admin)
    assert r.status_code == 400, r.text
    entries = (await _audit(master, action="POST /api/v1/agents/{agent_id:str}/enable")).json()
    (e,) = entries["entries"]
    assert e["outcome"] == "invalid" and e["status"] == 400
    assert e["path"] == "/api/v1/agents/a\ufffdb/enable"
    assert e["targets"] == {"agent_id": "a\ufffdb"}
