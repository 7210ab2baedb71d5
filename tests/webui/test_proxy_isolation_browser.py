"""A page served by bob's notebook, opened by the admin in Chromium, cannot read or use the
admin's session (issue 38, finding 1). The admin is signed in the way the web UI signs in (the
HttpOnly `auth` cookie); "bob's notebook" is a test service registered as his task's address,
serving a page that tries every way to the admin's session and reports what it got. A second
task (the admin's own, already opened in the same browser) must not be reached either."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from controlplane.domain.proxy_ports import assigned_ports
from controlplane.services.auth import client_hash
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import add_agent
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster, eventually
from tests.webui.browser import CHROMIUM, FLAGS

playwright = pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="no chromium (apt-get install chromium)"
    ),
]

# Everything the page tries, each reported as what it got (or the error that stopped it).
ATTACK = (Path(__file__).parent / "proxy_attack.js").read_text()


class Service:
    """A task's service: a page for HTTP, an echo for a WebSocket; what reached it."""

    def __init__(self, page: str) -> None:
        self.page = page
        self.paths: list[str] = []

    def process(self, connection: ServerConnection, request: Request) -> Response | None:
        self.paths.append(request.path)
        if request.headers.get("upgrade", "").lower() == "websocket":
            return None
        body = self.page.encode()
        headers = Headers([("Content-Type", "text/html"), ("Content-Length", str(len(body)))])
        return Response(200, "OK", headers, body)

    async def handler(self, ws: ServerConnection) -> None:
        await ws.send("from the task")
        await ws.wait_closed()


@contextlib.asynccontextmanager
async def task_service(service: Service, task_id: str) -> AsyncIterator[int]:
    """Listening on the first of the task's given ports that is free."""
    for port in assigned_ports(task_id):
        try:
            server = await serve(
                service.handler, "127.0.0.1", port, process_request=service.process
            )
        except OSError:
            continue
        async with server:
            yield port
        return
    raise AssertionError("none of the task's ports is free")


async def notebook(m: LiveMaster, agent: FakeAgent, headers: dict[str, str]) -> tuple[str, str]:
    r = await m.http.post("/api/v1/notebooks", json={"config": {}}, headers=headers)
    assert r.status_code == 200, r.text
    task_id = r.json()["notebook"]["id"]

    async def started() -> Any:
        return next((s for s in agent.started.values() if s.spec.task_id == task_id), None)

    spec = (await eventually(started)).spec
    return task_id, f"{spec.allocation_id} {spec.environment['DET_SESSION_TOKEN']}"


async def register(m: LiveMaster, allocation: str, port: int) -> None:
    alloc, token = allocation.split(" ")
    r = await m.http.post(
        f"/api/v1/allocations/{alloc}/proxy_address",
        json={"proxyAddress": f"127.0.0.1:{port}"},
        headers={"Grpc-Metadata-x-allocation-token": f"Bearer {token}"},
    )
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_page_of_bobs_notebook_cannot_reach_the_admins_session(
    start_master: StartMaster, agents: list[FakeAgent], db_url: str
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 4)
    r = await m.http.post(
        "/api/v1/users", json={"user": {"username": "bob", "active": True}, "password": PASSWORD},
        headers=m.admin,
    )  # fmt: skip
    assert r.status_code == 200, r.text
    bob = await m.login("bob", PASSWORD)
    bobs, bobs_alloc = await notebook(m, agent, bob)
    victim, victim_alloc = await notebook(m, agent, m.admin)
    port = m.url.rsplit(":", 1)[1]
    main = f"http://localhost:{port}"  # the UI's origin; tasks' origins are *.localhost
    page_html = (
        '<!doctype html><html><body><pre id="out"></pre><script>'
        + ATTACK.replace("MAIN", json.dumps(main))
        .replace("VICTIM_ORIGIN", json.dumps(f"http://{victim}.localhost:{port}"))
        .replace("VICTIM", json.dumps(victim))
        .replace("OWN", json.dumps(f"/proxy/{bobs}/"))
        + "</script></body></html>"
    )
    attacker, target = Service(page_html), Service("<!doctype html><p>the admin's notebook</p>")
    async with (
        task_service(attacker, bobs) as attacker_port,
        task_service(target, victim) as target_port,
        playwright.async_playwright() as p,
    ):
        await register(m, bobs_alloc, attacker_port)
        await register(m, victim_alloc, target_port)
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        context = await browser.new_context()
        # Signed in as the web UI signs in: the HttpOnly, SameSite=Strict `auth` cookie.
        login = await context.request.post(
            f"{main}/api/v1/auth/login",
            data={"username": "admin", "password": client_hash(PASSWORD), "isHashed": True},
            headers={"X-Resolute-CSRF": "1", "Origin": main},
        )
        assert login.ok, await login.text()
        [cookie] = [c for c in await context.cookies() if c["name"] == "auth"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
        token = cookie["value"]
        page = await context.new_page()
        # the admin opens their own notebook first: the browser now holds its task cookie
        await page.goto(f"{main}/proxy/{victim}/")
        assert page.url.startswith(f"http://{victim}.localhost:{port}/proxy/{victim}/")
        assert "the admin's notebook" in await page.content()
        # then bob's notebook's link
        await page.goto(f"{main}/proxy/{bobs}/")
        assert page.url == f"http://{bobs}.localhost:{port}/proxy/{bobs}/", page.url
        await page.wait_for_function("document.getElementById('out').textContent !== ''")
        got = json.loads(await page.locator("#out").text_content() or "{}")
        await browser.close()

    everything = json.dumps(got)
    assert token not in everything and "resolute_proxy=" not in everything, got
    assert got["cookie"] == "" and got["storage"] == "{}", got
    # the page's own task works at its origin (its fetches and sockets carry its cookie)
    assert got["own_api"].startswith("200 "), got
    assert got["own_ws"] == "message from the task", got
    # its origin has no API and no UI, and the master's origin answers it nothing readable
    for name in ("same_origin_me", "same_origin_users_me", "same_origin_det"):
        assert got[name].startswith("404 "), (name, got)
    for name in ("main_me", "main_users_me"):
        assert got[name] == "error: TypeError", (name, got)  # CORS: unreadable
    for name in ("iframe_det", "window_det"):
        assert got[name] == "error: SecurityError", (name, got)
    # no write went through with the admin's cookie
    users = (await m.get("/api/v1/users"))["users"]
    assert not {"mallory", "mallory2"} & {u["username"] for u in users}, users
    # the admin's other task never saw a request the page made
    assert got["victim_via_main"] == "error: TypeError" and got["victim_ws"] == "error", got
    assert not [p for p in target.paths if "attack" in p], target.paths
    assert all("attack" not in p for p in attacker.paths)
