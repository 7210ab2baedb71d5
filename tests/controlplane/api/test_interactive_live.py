"""Notebooks end to end: a real master and a real agent (process runtime) start JupyterLab, the
master's proxy serves it (HTTP and the kernel's WebSocket) to its owner and refuses everyone
else, a cell runs, and the idle check kills it with the reason in its logs.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest
import websockets

from tests.agent.test_end_to_end import Processes
from tests.conftest import PASSWORD
from tests.support import interactive_cluster
from tests.support.interactive_cluster import login, start_cluster
from tests.support.live_master import eventually

pytestmark = pytest.mark.slow
procs = interactive_cluster.procs


async def ready_notebook(c: httpx.AsyncClient, h: dict[str, str], config: dict[str, Any]) -> str:
    r = await c.post("/api/v1/notebooks", json={"config": config, "files": []}, headers=h)
    assert r.status_code == 200, r.text
    nb = r.json()["notebook"]
    assert nb["serviceAddress"] == f"/proxy/{nb['id']}/"

    async def ready() -> bool:
        task = (await c.get(f"/api/v1/tasks/{nb['id']}", headers=h)).json()["task"]
        assert task.get("endTime") is None, task
        return bool(task["allocations"]) and task["allocations"][0]["isReady"]

    await eventually(ready, timeout=120, interval=0.5)
    return str(nb["id"])


async def raw_status(port: int, path: str, headers: dict[str, str]) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    return int(status_line.split()[1])


async def run_cell(ws_url: str, headers: dict[str, str], code: str) -> str:
    async with websockets.connect(ws_url, additional_headers=headers) as ws:
        msg_id = uuid.uuid4().hex
        await ws.send(
            json.dumps(
                {
                    "header": {"msg_id": msg_id, "username": "t", "session": uuid.uuid4().hex,
                               "msg_type": "execute_request", "version": "5.3", "date": ""},
                    "parent_header": {}, "metadata": {}, "channel": "shell",
                    "content": {"code": code, "silent": False, "store_history": False,
                                "user_expressions": {}, "allow_stdin": False},
                    "buffers": [],
                }
            )
        )  # fmt: skip
        out = []
        async for raw in ws:
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return "".join(out)
    raise AssertionError("the kernel's socket closed before the cell finished")


async def test_notebook_through_the_proxy_runs_a_cell_and_dies_idle(procs: Processes, tmp_path):
    port = await start_cluster(procs, tmp_path)
    base = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=base, timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        user = {"user": {"username": "stranger", "active": True}, "password": "Pw-123456"}
        r = await c.post("/api/v1/users", headers=admin, json=user)
        assert r.status_code == 200, r.text
        stranger = await login(c, "stranger", "Pw-123456")
        config = {"idle_timeout": "20s", "notebook_idle_type": "activity"}
        task_id = await ready_notebook(c, admin, config)
        prefix = f"/proxy/{task_id}/"

        # HTTP through the proxy, with the bearer token and with the web UI's cookie
        status = await c.get(f"{prefix}api/status", headers=admin)
        assert status.status_code == 200 and "started" in status.json(), status.text
        # the web UI's cookie sends the browser to the task's own origin with a one-time ticket,
        # which that origin trades for its own cookie (browsers resolve *.localhost to loopback;
        # here the Host header names it)
        token = admin["Authorization"].split()[1]
        c.cookies.set("auth", token)
        sent_on = await c.get(f"{prefix}lab")
        c.cookies.clear()
        assert sent_on.status_code == 302, sent_on.text
        to = httpx.URL(sent_on.headers["location"])
        assert to.host == f"{task_id}.localhost" and to.path == f"{prefix}lab"
        origin = {"Host": f"{to.host}:{to.port}"}
        traded = await c.get(f"{to.path}?{to.query.decode()}", headers=origin)
        assert traded.status_code == 302 and traded.headers["location"] == f"{prefix}lab"
        cookie = traded.headers["set-cookie"].split(";")[0]
        assert cookie.startswith("resolute_proxy=") and "HttpOnly" in traded.headers["set-cookie"]
        again = await c.get(f"{to.path}?{to.query.decode()}", headers=origin)
        assert again.status_code == 401, again.text  # a ticket is good once
        lab = await c.get(f"{prefix}lab", headers={**origin, "Cookie": cookie})
        assert lab.status_code == 200 and "JupyterLab" in lab.text
        assert "sandbox" not in lab.headers.get("content-security-policy", "")
        # on the master's origin, with a bearer token: sandboxed
        bearer = await c.get(f"{prefix}lab", headers=admin)
        assert bearer.status_code == 200
        assert "sandbox allow-scripts" in bearer.headers["content-security-policy"]
        assert "allow-same-origin" not in bearer.headers["content-security-policy"]

        # refusals
        assert (await c.get(f"{prefix}api/status")).status_code == 401
        forged = {"Authorization": "Bearer " + "x" * 40}
        assert (await c.get(f"{prefix}api/status", headers=forged)).status_code == 401
        assert (await c.get(f"{prefix}api/status", headers=stranger)).status_code == 403
        for bad in ("%2e%2e", "%2E%2e", ".%2e", "a%00b", "a%2fb", "%2e"):
            r = await c.get(f"{prefix}{bad}/api/v1/me", headers=admin)
            assert r.status_code == 400, (bad, r.status_code, r.text)
        # httpx resolves a literal '..' itself: send it as written
        assert await raw_status(port, f"{prefix}../{task_id}/api/status", admin) == 400
        r = await c.get(f"/proxy/{uuid.uuid4()}/api/status", headers=admin)
        assert r.status_code == 404, r.text

        # a cell runs in a kernel reached over the proxied WebSocket
        kernel = await c.post(f"{prefix}api/kernels", headers=admin, json={"name": "python3"})
        assert kernel.status_code == 201, kernel.text
        ws_url = f"ws://127.0.0.1:{port}{prefix}api/kernels/{kernel.json()['id']}/channels"
        assert (await run_cell(ws_url, admin, "print(6 * 7)")).strip() == "42"
        with pytest.raises(websockets.InvalidStatus):
            await run_cell(ws_url, stranger, "print(1)")

        # idle: no requests for 20 s and no busy kernel -> killed, with the reason in its logs
        async def ended() -> dict[str, Any] | None:
            nb = (await c.get(f"/api/v1/notebooks/{task_id}", headers=admin)).json()["notebook"]
            return nb if nb["state"] == "STATE_TERMINATED" else None

        await eventually(ended, timeout=120, interval=1)
        logs = await c.get(f"/api/v1/tasks/{task_id}/logs", headers=admin)
        assert "notebook idle for" in logs.text and "notebook_idle_type activity" in logs.text
        assert (await c.get(f"{prefix}api/status", headers=admin)).status_code == 404


async def test_a_user_connected_when_the_notebook_dies_is_told_why(procs: Processes, tmp_path):
    port = await start_cluster(procs, tmp_path)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        task_id = await ready_notebook(c, admin, {})
        prefix = f"/proxy/{task_id}/"
        kernel = await c.post(f"{prefix}api/kernels", headers=admin, json={"name": "python3"})
        assert kernel.status_code == 201, kernel.text
        ws_url = f"ws://127.0.0.1:{port}{prefix}api/kernels/{kernel.json()['id']}/channels"
        async with websockets.connect(ws_url, additional_headers=admin) as ws:
            r = await c.post(f"/api/v1/notebooks/{task_id}/kill", headers=admin)
            assert r.status_code == 200, r.text
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ws.recv(), 60)
        frame = closed.value.rcvd
        assert frame is not None and frame.code == 1011, frame
        assert frame.reason.startswith("the task ended"), frame.reason
