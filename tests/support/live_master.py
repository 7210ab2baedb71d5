"""A real master on a loopback port, in the test's own event loop (uvicorn + the real app)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from litestar import Litestar

from controlplane.api.proxy_front import http_protocol
from controlplane.app import create_app
from controlplane.config import MasterSettings
from controlplane.services.auth import client_hash
from controlplane.services.scheduling.pools import Scheduling


@dataclass
class LiveMaster:
    app: Litestar
    url: str
    http: httpx.AsyncClient
    admin: dict[str, str]

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1)

    @property
    def scheduling(self) -> Scheduling:
        return self.app.state["api"].scheduling

    async def login(self, username: str, password: str) -> dict[str, str]:
        r = await self.http.post(
            "/api/v1/auth/login",
            json={"username": username, "password": client_hash(password), "isHashed": True},
        )
        assert r.status_code == 200, r.text
        return {"Authorization": f"Bearer {r.json()['token']}"}

    async def get(self, path: str, **kw: Any) -> Any:
        r = await self.http.get(path, headers=self.admin, **kw)
        assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text}"
        return r.json()

    async def post(self, path: str, body: Any = None, expect: int = 200) -> Any:
        r = await self.http.post(path, headers=self.admin, json=body)
        assert r.status_code == expect, f"POST {path}: {r.status_code} {r.text}"
        return r.json() if r.content else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.asynccontextmanager
async def live_master(
    settings: MasterSettings, password: str, **app_options: Any
) -> AsyncIterator[LiveMaster]:
    """`app_options` go to create_app (e.g. a provisioner_factory)."""
    app = create_app(settings, announce=lambda _: None, **app_options)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        http=http_protocol(app, settings.http.proxy_front),  # type: ignore[arg-type]
        log_level="warning",
        lifespan="on",
        ws="websockets-sansio",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        for _ in range(400):
            if server.started:
                break
            if task.done():
                task.result()
            await asyncio.sleep(0.025)
        url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            m = LiveMaster(app=app, url=url, http=http, admin={})
            m.admin = await m.login("admin", password)
            yield m
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 15)
        sock.close()


async def eventually(check: Any, timeout: float = 10.0, interval: float = 0.05) -> Any:
    """Poll an async check until it returns a truthy value; its last error explains a timeout."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = await check()
            if value:
                return value
        except AssertionError as exc:
            last = exc
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not true within {timeout}s; last error: {last}")
        await asyncio.sleep(interval)


StartMaster = Callable[..., Awaitable[LiveMaster]]


@contextlib.asynccontextmanager
async def master_starter(db_url: str, tmp_path: Any) -> AsyncIterator[StartMaster]:
    """`await start(**settings)` starts a live master on `db_url`; all stop on exit."""
    from tests.conftest import PASSWORD, make_settings

    stack = contextlib.AsyncExitStack()
    async with stack:

        async def start(app_options: dict[str, Any] | None = None, **settings: Any) -> LiveMaster:
            cm = live_master(
                make_settings(db_url, tmp_path, **settings), PASSWORD, **(app_options or {})
            )
            return await stack.enter_async_context(cm)

        yield start
