"""The master's front protocol (`proxy_front`) under a real uvicorn server, spoken to as raw
bytes: proxied requests on the lean path (told apart by the answer: uvicorn's carry its
`server: uvicorn` header, the lean path passes the service's head on as it is), the hand-over to
uvicorn for anything else on the same connection, and that every request of a kept-alive
connection is authenticated on its own. The targets are cached or looked up by a stand-in, so
no database is involved; the real lookup's rules are in test_interactive_bad_input."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import websockets

from controlplane.api import proxy, proxy_lookup
from controlplane.api.proxy_front import front_protocol
from controlplane.domain.errors import NotFound, Unauthenticated
from tests.controlplane.api.test_proxy_upstream import (
    SECRET,
    TASK,
    TOKEN,
    App,
    Request,
    ok,
    service,
)
from tests.controlplane.test_tls import self_signed

AUTH = b"authorization: " + TOKEN + b"\r\n"


@pytest.fixture(autouse=True)
def task_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    async def runs(state: Any, task_id: str) -> None:
        return None

    monkeypatch.setattr(proxy, "_why_gone", runs)


def asgi_for(app: App) -> Any:
    """The master's ASGI side, in small: `/proxy/…` to `proxy.serve`, anything else answered
    with its path, a WebSocket elsewhere echoed once."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"].startswith(proxy.PREFIX):
            scope["litestar_app"] = app
            await proxy.serve(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            message = await receive()
            await send({"type": "websocket.send", "text": "echo " + message.get("text", "")})
            await send({"type": "websocket.close"})
            return
        body = b"api " + scope["path"].encode()
        headers = [(b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return asgi


@contextlib.asynccontextmanager
async def front(app: App, **config: Any) -> AsyncIterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = {"lifespan": "off", "log_level": "warning", "ws": "websockets-sansio", **config}
    server = uvicorn.Server(uvicorn.Config(asgi_for(app), http=front_protocol(app), **config))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        assert not task.done(), task.result()
        await asyncio.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


async def read_response(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """(head, body) of one response framed by its length."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(Request(head, b"").header(b"content-length")[0])
    return head, await reader.readexactly(length)


def get(path: str = "api/status", extra: bytes = b"") -> bytes:
    return f"GET /proxy/{TASK}/{path} HTTP/1.1\r\nhost: m\r\n".encode() + AUTH + extra + b"\r\n"


def lean(head: bytes) -> bool:
    return b"server: uvicorn" not in head.lower()


async def test_a_connection_mixes_proxied_and_api_requests() -> None:
    async with service(lambda r, c, n: ok(b"answer %d" % n)) as s, front(App(s.port)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(get())
        head, body = await read_response(reader)
        assert head.startswith(b"HTTP/1.1 200 ") and body == b"answer 1" and lean(head)
        writer.write(get())
        head, body = await read_response(reader)
        assert body == b"answer 2" and lean(head)
        # An API request hands the connection to uvicorn, which serves the rest of it.
        writer.write(b"GET /api/v1/me HTTP/1.1\r\nhost: m\r\n\r\n")
        head, body = await read_response(reader)
        assert body == b"api /api/v1/me" and not lean(head)
        writer.write(get())
        head, body = await read_response(reader)
        assert body == b"answer 3" and not lean(head)
        writer.close()
        assert s.connections == 1  # both paths share the kept-alive upstream connection
        sent = s.requests[0]
        assert sent.line == f"GET /proxy/{TASK}/api/status HTTP/1.1".encode()
        assert sent.header(b"x-resolute-proxy-secret") == [SECRET.encode()]
        assert sent.header(b"authorization") == [] and sent.header(b"content-length") == []
        assert sent.header(b"host") == [f"127.0.0.1:{s.port}".encode()]
        assert sent.header(b"x-forwarded-for") == [b"127.0.0.1"]


async def test_pipelined_requests_are_answered_in_order() -> None:
    def answer(r: Request, c: int, n: int) -> bytes:
        return ok(r.line.split()[1] + b" " + r.body)

    async with service(answer) as s, front(App(s.port)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        post = f"POST /proxy/{TASK}/b HTTP/1.1\r\nhost: m\r\ncontent-length: 4\r\n".encode()
        writer.write(get("a") + post + AUTH + b"\r\nbody" + get("c") + b"GET /x HTTP/1.1\r\n\r\n")
        bodies = [(await read_response(reader))[1] for _ in range(4)]
        assert bodies == [
            f"/proxy/{TASK}/a ".encode(), f"/proxy/{TASK}/b body".encode(),
            f"/proxy/{TASK}/c ".encode(), b"api /x",
        ]  # fmt: skip
        writer.close()


async def test_chunked_bodies_both_ways() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )

    async with service(lambda r, c, n: chunked) as s, front(App(s.port)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        # A chunked answer passes as the service framed it.
        writer.write(get())
        head = await reader.readuntil(b"\r\n\r\n")
        assert lean(head) and b"transfer-encoding: chunked" in head.lower()
        assert await reader.readuntil(b"0\r\n\r\n") == b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
        # A chunked request goes to uvicorn's side, which streams it on.
        writer.write(
            f"PUT /proxy/{TASK}/up HTTP/1.1\r\nhost: m\r\ntransfer-encoding: chunked\r\n".encode()
            + AUTH + b"\r\n4\r\nwxyz\r\n1\r\n!\r\n0\r\n\r\n"
        )  # fmt: skip
        head = await reader.readuntil(b"\r\n\r\n")
        assert not lean(head)
        assert s.requests[1].body == b"wxyz!"
        writer.close()


async def test_large_bodies_pass_whole_and_in_order() -> None:
    up = bytes(range(256)) * 40_000  # 10 MB
    down = bytes(reversed(range(256))) * 40_000

    reply = ok(down)
    async with (
        service(lambda r, c, n: reply if r.body == up else ok(b"bad")) as s,
        front(App(s.port)) as port,
        httpx.AsyncClient() as http,
    ):
        r = await http.post(
            f"http://127.0.0.1:{port}/proxy/{TASK}/big", content=up,
            headers={"authorization": TOKEN.decode()},
        )  # fmt: skip
        assert r.status_code == 200 and r.content == down
        assert lean(b"".join(k + b": " + v + b"\r\n" for k, v in r.headers.raw))


async def test_a_websocket_is_handed_to_uvicorn_and_reaches_the_service() -> None:
    async def echo(ws: Any) -> None:
        async for message in ws:
            await ws.send("service " + message)

    async with websockets.serve(echo, "127.0.0.1", 0) as ws_server:
        ws_port = ws_server.sockets[0].getsockname()[1]
        app = App(ws_port)
        target = proxy.Target(TASK, "NOTEBOOK", f"127.0.0.1:{ws_port}", 1, SECRET)
        app.state["proxy_targets"].put((b"authorization:" + TOKEN, TASK, True), target)
        async with front(app) as port:
            url = f"ws://127.0.0.1:{port}/proxy/{TASK}/api/kernels/k/channels"
            async with websockets.connect(
                url, additional_headers={"authorization": TOKEN.decode()}
            ) as ws:
                await ws.send("hi")
                assert await ws.recv() == "service hi"
            async with websockets.connect(f"ws://127.0.0.1:{port}/elsewhere") as ws:
                await ws.send("hi")
                assert await ws.recv() == "echo hi"


async def test_every_request_of_a_connection_is_authenticated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    revoked = False

    async def lookup(state: Any, scope: Any, task_id: str, is_ws: bool) -> proxy.Target:
        if revoked:
            raise Unauthenticated("the token has expired or was revoked")
        if task_id != TASK:
            raise NotFound(f"interactive task {task_id} not found")
        return proxy.Target(TASK, "NOTEBOOK", address, 1, SECRET)

    monkeypatch.setattr(proxy_lookup, "_lookup", lookup)
    async with service(lambda r, c, n: ok()) as s:
        address = f"127.0.0.1:{s.port}"
        app = App(s.port)
        app.state["proxy_targets"] = proxy.TargetCache(ttl_s=0.3)
        async with front(app) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(get())
            head, _ = await read_response(reader)
            assert head.startswith(b"HTTP/1.1 200 ")
            revoked = True
            await asyncio.sleep(0.4)  # the cache's time to live (2 s in the master)
            writer.write(get())
            head, body = await read_response(reader)
            assert head.startswith(b"HTTP/1.1 401 ") and b"expired or was revoked" in body
            assert len(s.requests) == 1
            revoked = False
            # The refusals stay as clear as the ASGI path's, and the connection serves on.
            writer.write(
                b"GET /proxy/other/x HTTP/1.1\r\nhost: m\r\n" + AUTH + b"\r\n"
                + get("%2e%2e/escape")
            )  # fmt: skip
            head, body = await read_response(reader)
            assert head.startswith(b"HTTP/1.1 404 ") and b"task other not found" in body
            head, body = await read_response(reader)
            assert head.startswith(b"HTTP/1.1 400 ") and b"may not leave" in body
            writer.close()


async def test_a_service_gone_mid_connection_is_a_502_that_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def gone(state: Any, task_id: str) -> str:
        return "the task ended (killed)"

    async with (
        service(lambda r, c, n: ok() if n == 1 else None) as s,
        front(App(s.port)) as port,
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(get())
        await read_response(reader)
        monkeypatch.setattr(proxy, "_why_gone", gone)
        post = f"POST /proxy/{TASK}/x HTTP/1.1\r\nhost: m\r\ncontent-length: 1\r\n".encode()
        writer.write(post + AUTH + b"\r\nz")
        head, body = await read_response(reader)
        assert head.startswith(b"HTTP/1.1 502 ") and b"the task ended (killed)" in body
        writer.close()


async def test_an_answer_cut_short_closes_the_clients_connection() -> None:
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"
    async with service(lambda r, c, n: cut, close_after=True) as s, front(App(s.port)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(get())
        await reader.readuntil(b"\r\n\r\n")
        assert await reader.read() == b"abc"  # then the end, not a complete answer
        writer.close()


async def test_the_lean_path_serves_over_tls(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    async with service(lambda r, c, n: ok(b"secure")) as s:
        config = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
        async with front(App(s.port), **config) as port:
            context = ssl.create_default_context(cafile=str(cert))
            context.check_hostname = False
            async with httpx.AsyncClient(verify=context) as http:
                headers = {"authorization": TOKEN.decode()}
                r = await http.get(f"https://127.0.0.1:{port}/proxy/{TASK}/x", headers=headers)
                assert r.status_code == 200 and r.text == "secure"
                assert "server" not in r.headers
                r = await http.get(f"https://127.0.0.1:{port}/api/v1/me")
                assert r.text == "api /api/v1/me"


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /proxy/%s/x HTTP/1.1\nhost: m\n\n",  # bare newlines
        b"GET /proxy/%s/x HTTP/1.1\r\nhost: m\n\nGET /proxy/%s/y HTTP/1.1\r\n\r\n",  # one hidden
        b"GET /proxy/%s/x HTTP/1.0\r\nhost: m\r\n\r\n",
    ],
)
async def test_heads_the_lean_path_does_not_serve_are_uvicorns(raw: bytes) -> None:
    async with service(lambda r, c, n: ok()) as s, front(App(s.port)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(raw.replace(b"%s", TASK.encode()))
        answer = await asyncio.wait_for(reader.read(), 10)  # uvicorn's, whatever it is
        assert answer and not lean(answer.split(b"\r\n\r\n")[0])
        writer.close()


async def test_a_kept_connection_closed_unanswered_is_replaced_for_a_get() -> None:
    # The second request goes out inline on the kept connection, which the service closes
    # without answering: it is sent once more, on a fresh connection.
    def answer(r: Request, c: int, n: int) -> bytes | None:
        return None if (c, n) == (1, 2) else ok(b"connection %d" % c)

    async with service(answer) as s, front(App(s.port)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for expected in (b"connection 1", b"connection 2", b"connection 2"):
            writer.write(get())
            head, body = await read_response(reader)
            assert head.startswith(b"HTTP/1.1 200 ") and body == expected and lean(head)
        assert s.connections == 2
        writer.close()
