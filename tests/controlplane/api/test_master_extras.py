"""Determined's smaller master endpoints: the log level at run time (`det master config set
--log.level`), telemetry (never on), `/api/v1/auth/user`, and the Kubernetes-only endpoints on
an agent cluster (empty reads, refused writes, unknown workspaces 404)."""

from __future__ import annotations

import json
import logging

from tests.conftest import Master


async def test_an_admin_sets_the_log_level_and_a_user_may_not(master: Master) -> None:
    root = logging.getLogger()
    before = root.level
    body = {"config": {"log": {"level": "LOG_LEVEL_DEBUG"}}, "fieldMask": {"paths": ["log.level"]}}
    try:
        r = await master.client.patch("/api/v1/master/config", headers=master.user, json=body)
        assert r.status_code == 403
        r = await master.client.patch("/api/v1/master/config", headers=master.admin, json=body)
        assert r.status_code == 200, r.text
        assert root.level == logging.DEBUG
        for bad in (
            {"config": {"log": {"level": "LOUD"}}, "fieldMask": {"paths": ["log.level"]}},
            {"config": {}, "fieldMask": {"paths": ["db.password"]}},
            {"config": {"log": {"level": "LOG_LEVEL_INFO"}}},
        ):
            r = await master.client.patch("/api/v1/master/config", headers=master.admin, json=bad)
            assert r.status_code == 400, (bad, r.text)
        color = {"config": {"log": {"color": True}}, "fieldMask": {"paths": ["log.color"]}}
        r = await master.client.patch("/api/v1/master/config", headers=master.admin, json=color)
        assert r.status_code == 200
    finally:
        root.setLevel(before)


async def test_telemetry_is_off_and_auth_user_is_the_caller(master: Master) -> None:
    r = await master.client.get("/api/v1/master/telemetry", headers=master.user)
    assert r.json() == {"enabled": False, "segmentKey": None}
    r = await master.client.get("/api/v1/auth/user", headers=master.user)
    assert r.json()["user"]["username"] == "determined"
    assert (await master.client.get("/api/v1/auth/user")).status_code == 401


async def test_kubernetes_endpoints_on_an_agent_cluster(master: Master) -> None:
    h = master.user
    r = await master.client.get("/api/v1/k8s-resource-managers", headers=h)
    assert r.json() == {"resourceManagers": []}
    r = await master.client.get(
        "/api/v1/namespace-bindings/workspace-ids-with-default-bindings", headers=h
    )
    assert r.json() == {"workspaceIds": []}
    r = await master.client.get("/api/v1/workspaces/1/list-namespace-bindings", headers=h)
    assert r.json() == {"namespaceBindings": {}}
    r = await master.client.get("/api/v1/workspaces/1/get-k8s-resource-quotas", headers=h)
    assert r.json() == {"resourceQuotas": {}}
    for method, path in (
        ("POST", "/api/v1/workspaces/1/namespace-bindings"),
        ("DELETE", "/api/v1/workspaces/1/namespace-bindings"),
        ("POST", "/api/v1/workspaces/1/set-resource-quota"),
        ("POST", "/api/v1/namespace-bindings/bulk-auto-create"),
    ):
        kwargs = {"json": {}} if method == "POST" else {}
        r = await master.client.request(method, path, headers=master.admin, **kwargs)
        assert r.status_code == 400 and "no Kubernetes resource manager" in r.json()["message"]
    r = await master.client.get("/api/v1/workspaces/987654/list-namespace-bindings", headers=h)
    assert r.status_code == 404
    r = await master.client.post(
        "/api/v1/workspaces/987654/set-resource-quota", headers=master.admin, json={}
    )
    assert r.status_code == 404


async def test_master_logs_for_admins(master: Master) -> None:
    logging.getLogger("controlplane.test").warning("a line for the master log")
    r = await master.client.get("/api/v1/master/logs", headers=master.admin, params={"offset": -50})
    assert r.status_code == 200, r.text
    entries = [json.loads(x)["result"]["logEntry"] for x in r.text.splitlines()]
    assert any(e["message"].endswith("a line for the master log") for e in entries)
    assert all(e["level"].startswith("LOG_LEVEL_") and e["id"] > 0 for e in entries)
    r = await master.client.get("/api/v1/master/logs", headers=master.admin, params={"limit": 1})
    assert len(r.text.splitlines()) == 1
    r = await master.client.get("/api/v1/master/logs", headers=master.user)
    assert r.status_code == 403
    r = await master.client.get("/api/v1/master/logs", headers=master.admin, params={"limit": -1})
    assert r.status_code == 400
