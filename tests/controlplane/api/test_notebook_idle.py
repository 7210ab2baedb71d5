"""IdleNotebook: "not idle" from the notebook's owner (or its own task) counts as activity for
its idle timeout; another user is refused; unknown notebooks and other task types are 404."""

from __future__ import annotations

from tests.conftest import PASSWORD, Master


async def test_report_idle(master: Master) -> None:
    r = await master.client.post("/api/v1/notebooks", headers=master.user, json={"config": {}})
    assert r.status_code == 200, r.text
    nb = r.json()["notebook"]["id"]
    board = master.client.app.state["proxy_activity"]
    assert nb not in board.last
    url = f"/api/v1/notebooks/{nb}/report_idle"
    r = await master.client.put(url, headers=master.user, json={"notebookId": nb, "idle": True})
    assert r.status_code == 200, r.text
    assert nb not in board.last  # idle: nothing to note
    r = await master.client.put(url, headers=master.user, json={"idle": False})
    assert r.status_code == 200 and nb in board.last

    r = await master.client.post(
        "/api/v1/users", headers=master.admin,
        json={"user": {"username": "eve", "active": True}, "password": PASSWORD},
    )  # fmt: skip
    eve = await master.login("eve")
    assert (await master.client.put(url, headers=eve, json={"idle": False})).status_code == 403
    assert (await master.client.put(url, headers=master.admin, json={})).status_code == 200
    r = await master.client.post(
        "/api/v1/commands", headers=master.user, json={"config": {"entrypoint": ["true"]}}
    )
    cmd = r.json()["command"]["id"]
    for path in (f"/api/v1/notebooks/{cmd}/report_idle", "/api/v1/notebooks/nope/report_idle"):
        assert (await master.client.put(path, headers=master.user, json={})).status_code == 404
    r = await master.client.put(url, headers=master.user, json={"notebookId": "other"})
    assert r.status_code == 400
    r = await master.client.put(url, headers=master.user, json={"idle": "maybe"})
    assert r.status_code == 400
