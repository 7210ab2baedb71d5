"""Bad input for notebooks, TensorBoards, shells, their task reports and the proxy: a clear 4xx
with the one error body, never a 500, and nothing stored. Both databases."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_smoke_flow import CONFIG

INT32_MAX = 2**31 - 1


async def launch(m: Master, plural: str, body: dict[str, Any]) -> Any:
    return await m.client.post(f"/api/v1/{plural}", json=body, headers=m.user)


@pytest.mark.parametrize(
    ("config", "status", "needle"),
    [
        ({"idle_timeout": "soon"}, 400, "idle_timeout"),
        ({"idle_timeout": "-5m"}, 400, "idle_timeout"),
        ({"notebook_idle_type": "busy"}, 400, "notebook_idle_type"),
        ({"no_such_key": 1}, 400, "no_such_key"),
        ({"resources": {"slots": -1}}, 400, "slots"),
        ({"description": "x" * 100_000}, 400, "description"),
        ("entrypoint: [unclosed", 400, "line 1"),
        ("- a list", 400, "mapping"),
    ],
)
async def test_bad_notebook_configs(master: Master, config: Any, status: int, needle: str):
    r = await launch(master, "notebooks", {"config": config})
    assert_error(r, status, needle)
    listed = await master.client.get("/api/v1/notebooks", headers=master.user)
    assert listed.json()["notebooks"] == []


async def test_bad_tensorboard_requests(master: Master) -> None:
    assert_error(await launch(master, "tensorboards", {}), 400, "experiment ids or trial ids")
    r = await launch(master, "tensorboards", {"experimentIds": [424242]})
    assert_error(r, 404, "experiment 424242")
    assert_error(await launch(master, "tensorboards", {"trialIds": [424242]}), 404, "trial 424242")
    r = await launch(master, "tensorboards", {"experimentIds": [INT32_MAX + 1]})
    assert r.status_code == 400, r.text
    r = await launch(master, "tensorboards", {"experimentIds": ["one"]})
    assert r.status_code == 400, r.text
    r = await launch(master, "tensorboards", {"experimentIds": list(range(1, 2000))})
    assert r.status_code == 400, r.text
    listed = await master.client.get("/api/v1/tensorboards", headers=master.user)
    assert listed.json()["tensorboards"] == []


async def test_unknown_and_foreign_ids(master: Master) -> None:
    m = master
    for plural in ("notebooks", "tensorboards", "shells"):
        for bad in ("nope", "a%00b", "x" * 129):
            r = await m.client.get(f"/api/v1/{plural}/{bad}", headers=m.user)
            assert r.status_code in (400, 404), (plural, bad, r.text)
        assert_error(await m.client.post(f"/api/v1/{plural}/nope/kill", headers=m.user), 404)
        assert_error(await m.client.get(f"/api/v1/{plural}/nope"), 401)
    # a command is not a notebook, nor an experiment's trial task a shell
    body = {"config": {"entrypoint": ["true"], "resources": {"slots": 0}}}
    cmd = (await m.client.post("/api/v1/commands", json=body, headers=m.user)).json()
    cmd_id = cmd["command"]["id"]
    assert_error(await m.client.get(f"/api/v1/notebooks/{cmd_id}", headers=m.user), 404)
    r = await m.client.get(f"/proxy/{cmd_id}/", headers=m.user)
    assert_error(r, 404, "interactive task")
    r = await launch(m, "notebooks", {"config": {}, "templateName": "no-such-template"})
    assert_error(r, 404, "template")


async def test_task_reports_need_the_tasks_own_token(master: Master) -> None:
    m = master
    exp = await m.client.post("/api/v1/experiments", json={"config": CONFIG}, headers=m.user)
    assert exp.status_code == 200, exp.text
    for what, body in (("proxy_address", {"proxyAddress": "127.0.0.1:1"}), ("ready", None)):
        r = await m.client.post(f"/api/v1/allocations/x.1/{what}", json=body, headers=m.admin)
        assert_error(r, 403)
        assert_error(await m.client.post(f"/api/v1/allocations/x.1/{what}", json=body), 401)


async def test_the_proxy_refuses_before_reaching_anything(master: Master) -> None:
    m = master
    r = await launch(m, "notebooks", {"config": {}})
    assert r.status_code == 200, r.text
    nb = r.json()["notebook"]
    assert nb["serviceAddress"] == f"/proxy/{nb['id']}/" and nb["state"] == "STATE_QUEUED"
    prefix = f"/proxy/{nb['id']}/"
    assert_error(await m.client.get(f"{prefix}api/status"), 401, "authentication required")
    forged = {"Authorization": "Bearer forged-token-000000000000"}
    assert_error(await m.client.get(f"{prefix}api/status", headers=forged), 401)
    assert_error(await m.client.get(f"{prefix}%2e%2e/x", headers=m.user), 400, "may not leave")
    stranger = await m.login("admin")
    # an admin may reach it; it is queued: not serving yet
    assert_error(await m.client.get(f"{prefix}api/status", headers=stranger), 503, "not serving")
    assert_error(await m.client.get("/proxy/", headers=m.user), 404)


async def test_preview_shows_the_config_and_keeps_nothing(master: Master) -> None:
    body = {"config": {"idle_timeout": "5m"}, "preview": True}
    r = await launch(master, "notebooks", body)
    assert r.status_code == 200, r.text
    assert r.json()["config"]["idle_timeout"] == "5m"
    assert r.json()["config"]["resources"]["slots"] == 0
    listed = await master.client.get("/api/v1/notebooks", headers=master.user)
    assert listed.json()["notebooks"] == []
    jobs = await master.client.get("/api/v1/job-queues-v2", headers=master.user)
    assert jobs.json()["jobs"] == []


async def test_only_the_owner_and_admins_get_a_shells_key(master: Master) -> None:
    m = master
    r = await launch(m, "shells", {"config": {}})
    assert r.status_code == 200, r.text
    shell = r.json()["shell"]
    assert shell["privateKey"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert shell["agentUserGroup"]["user"]
    assert "resolute_interactive" not in r.json()["config"]
    for headers, has_key in ((m.user, True), (m.admin, True)):
        got = (await m.client.get(f"/api/v1/shells/{shell['id']}", headers=headers)).json()
        assert (got["shell"].get("privateKey") == shell["privateKey"]) is has_key
    body = {"user": {"username": "someone", "active": True}, "password": "Pw-123456"}
    assert (await m.client.post("/api/v1/users", json=body, headers=m.admin)).status_code == 200
    other = await m.login("someone", "Pw-123456")
    got = (await m.client.get(f"/api/v1/shells/{shell['id']}", headers=other)).json()
    assert "privateKey" not in got["shell"]
    listed = (await m.client.get("/api/v1/shells", headers=other)).json()["shells"]
    assert listed and all("privateKey" not in s for s in listed)
