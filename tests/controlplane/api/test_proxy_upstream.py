"""The proxy's HTTP path against a scripted service on a real socket: keep-alive reuse, every
way a response can be framed, streamed bodies both ways, a service that breaks the connection,
and the target cache. `proxy.serve` is called as the ASGI server would call it; the target is
already cached, so no database is involved (the refusals are in test_interactive_bad_input)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from controlplane.__main__ import NotProxied, log_config
from controlplane.api import proxy
from controlplane.api import proxy_upstream as upstream
from controlplane.domain.errors import Unauthenticated

TASK = "0b8f9a3e-4c59-4a57-9d7e-2f0f2b6c1a11"
TOKEN = b"Bearer user-token"
SECRET = "s" * 43


@dataclass
class Request:
    head: bytes
    body: bytes

    @property
    def line(self) -> bytes:
        return self.head.split(b"\r\n", 1)[0]

    def header(self, name: bytes) -> list[bytes]:
        out = []
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name:
                out.append(value.strip())
        return out


# answer(request, connection number, request number on that connection) -> bytes to write,
# or None to close the connection without answering.
Answer = Callable[[Request, int, int], bytes | None]


@dataclass
class Service:
    """A scripted HTTP/1.1 service: what it was sent, on how many connections."""

    answer: Answer
    close_after: bool = False  # close each connection after its first answer
    port: int = 0
    connections: int = 0
    requests: list[Request] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number, seq = self.connections, 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                request = Request(head, await read_body(reader, Request(head, b"")))
                self.requests.append(request)
                seq += 1
                reply = self.answer(request, number, seq)
                if reply is None:
                    return
                writer.write(reply)
                await writer.drain()
                if self.close_after:
                    return
        finally:
            writer.close()
            self.closed.set()


async def read_body(reader: asyncio.StreamReader, request: Request) -> bytes:
    if request.header(b"content-length"):
        return await reader.readexactly(int(request.header(b"content-length")[0]))
    if b"chunked" in b"".join(request.header(b"transfer-encoding")):
        body = b""
        while True:
            size = int((await reader.readline()).strip(), 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return body
            body += chunk[:-2]
    return b""


def ok(body: bytes = b"hello", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


@contextlib.asynccontextmanager
async def service(answer: Answer, close_after: bool = False) -> AsyncIterator[Service]:
    s = Service(answer, close_after)
    server = await asyncio.start_server(s.handle, "127.0.0.1", 0)
    s.port = server.sockets[0].getsockname()[1]
    try:
        yield s
    finally:
        server.close()


@pytest.fixture(autouse=True)
def task_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    async def runs(state: Any, task_id: str) -> None:
        return None

    monkeypatch.setattr(proxy, "_why_gone", runs)


class App:
    def __init__(self, port: int) -> None:
        self.state: dict[str, Any] = {
            "proxy_pool": upstream.Pool(),
            "proxy_targets": proxy.TargetCache(ttl_s=3600),
            "proxy_activity": proxy.ActivityBoard(),
            "api": type("Ctx", (), {"clock": staticmethod(lambda: datetime.now(UTC))})(),
        }
        target = proxy.Target(TASK, "NOTEBOOK", f"127.0.0.1:{port}", 1, SECRET)
        self.state["proxy_targets"].put((b"authorization:" + TOKEN, TASK, False), target)


@dataclass
class Exchange:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    messages: list[dict[str, Any]]

    @property
    def complete(self) -> bool:
        return bool(self.messages) and not self.messages[-1].get("more_body", False)


async def call(
    app: App,
    method: str = "GET",
    path: str = "api/status",
    body: list[bytes] | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
    on_message: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    disconnect: asyncio.Event | None = None,
) -> Exchange:
    parts = list(body or [b""])
    scope = {
        "type": "http", "method": method, "path": f"/proxy/{TASK}/{path}",
        "raw_path": f"/proxy/{TASK}/{path}".encode(), "query_string": b"",
        "headers": [(b"authorization", TOKEN), *(headers or [])],
        "client": ("127.0.0.9", 5555), "litestar_app": app,
    }  # fmt: skip

    async def receive() -> dict[str, Any]:
        if parts:
            chunk = parts.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(parts)}
        await (disconnect or asyncio.Event()).wait()
        return {"type": "http.disconnect"}

    messages: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)
        if on_message is not None:
            await on_message(message)

    await proxy.serve(scope, receive, send)
    start = messages[0]
    data = b"".join(m.get("body", b"") for m in messages[1:])
    return Exchange(start["status"], start.get("headers", []), data, messages)


async def test_requests_share_one_kept_alive_connection() -> None:
    async with service(lambda r, c, n: ok(b"answer %d" % n)) as s:
        app = App(s.port)
        for n in (1, 2, 3):
            got = await call(app)
            assert (got.status, got.body, got.complete) == (200, b"answer %d" % n, True)
        assert s.connections == 1
        sent = s.requests[0]
        assert sent.line == f"GET /proxy/{TASK}/api/status HTTP/1.1".encode()
        # the task's secret, never the user's credentials; the service's own address as host
        assert sent.header(b"x-resolute-proxy-secret") == [SECRET.encode()]
        assert sent.header(b"authorization") == [] and sent.header(b"content-length") == []
        assert sent.header(b"host") == [f"127.0.0.1:{s.port}".encode()]
        assert sent.header(b"x-forwarded-for") == [b"127.0.0.9"]


async def test_a_chunked_answer_is_decoded_for_the_server_to_frame_again() -> None:
    reply = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Kept: yes\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )
    async with service(lambda r, c, n: reply) as s:
        app = App(s.port)
        for _ in range(2):
            got = await call(app)
            assert got.body == b"hello world" and got.complete
            assert (b"X-Kept", b"yes") in got.headers
            assert not [k for k, _ in got.headers if k.lower() == b"transfer-encoding"]
        assert s.connections == 1


async def test_a_body_that_ends_with_the_connection() -> None:
    reply = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end"
    async with service(lambda r, c, n: reply, close_after=True) as s:
        app = App(s.port)
        for _ in range(2):
            got = await call(app)
            assert got.body == b"until the end" and got.complete
        assert s.connections == 2


async def test_head_answers_have_no_body() -> None:
    async with service(lambda r, c, n: b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n") as s:
        app = App(s.port)
        got = await asyncio.wait_for(call(app, "HEAD"), 10)
        assert (got.status, got.body, got.complete) == (200, b"", True)
        assert (b"Content-Length", b"1000") in got.headers
        assert (await call(app, "HEAD")).complete
        assert s.connections == 2  # a HEAD answer's connection is not trusted again


async def test_a_kept_connection_the_service_dropped_is_replaced_for_a_repeatable_request():
    # The service closes its first connection when asked a second time, without answering:
    # as if it had closed it while idle, just as the proxy sent.
    # Two kept connections, both dropped: the second try opens a new one.
    async with service(lambda r, c, n: ok() if n == 1 or c > 2 else None) as s:
        app = App(s.port)
        assert [r.status for r in await asyncio.gather(call(app), call(app))] == [200, 200]
        assert s.connections == 2
        got = await call(app)
        assert (got.status, got.body) == (200, b"hello")
        assert s.connections == 3


async def test_a_post_on_a_dropped_connection_is_not_sent_twice() -> None:
    async with service(lambda r, c, n: ok() if (c, n) != (1, 2) else None) as s:
        app = App(s.port)
        assert (await call(app)).status == 200
        got = await call(app, "POST", body=[b"{}"])
        assert got.status == 502
        assert [r.line.split()[0] for r in s.requests].count(b"POST") == 1


async def test_request_bodies_stream_with_their_length_or_chunked() -> None:
    async with service(lambda r, c, n: ok(b"got %d" % len(r.body))) as s:
        app = App(s.port)
        parts = [b"a" * 70_000, b"b" * 70_000, b"c"]
        got = await call(app, "PUT", body=list(parts), headers=[(b"content-length", b"140001")])
        assert got.body == b"got 140001"
        assert s.requests[-1].header(b"content-length") == [b"140001"]
        got = await call(app, "POST", body=list(parts))
        assert got.body == b"got 140001"
        assert s.requests[-1].header(b"transfer-encoding") == [b"chunked"]
        assert s.requests[-1].body == b"".join(parts)
        got = await call(app, "POST", body=[b"one piece"])
        assert s.requests[-1].header(b"content-length") == [b"9"]
        assert s.connections == 1


async def test_a_large_answer_streams_whole_and_in_order() -> None:
    body = bytes(range(256)) * 8192  # 2 MiB: reading from the service pauses on the way
    async with service(lambda r, c, n: ok(body)) as s:
        app = App(s.port)

        async def slow(message: dict[str, Any]) -> None:
            await asyncio.sleep(0.001)

        got = await call(app, on_message=slow)
        assert got.body == body and got.complete
        assert (await call(app)).body == body
        assert s.connections == 1


async def test_an_answer_cut_short_is_not_passed_off_as_complete() -> None:
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b"
    async with service(lambda r, c, n: reply, close_after=True) as s:
        got = await call(App(s.port))
        assert got.body == b"only ten b" and not got.complete


@pytest.mark.parametrize(
    "reply",
    [
        b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw",
    ],
)
async def test_garbage_from_the_service_is_a_502(reply: bytes) -> None:
    async with service(lambda r, c, n: reply) as s:
        got = await call(App(s.port))
        assert got.status == 502 and b"malformed" in got.body


async def test_a_stream_stops_when_its_client_leaves() -> None:
    leave = asyncio.Event()
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n"
    async with service(lambda r, c, n: head) as s:

        async def on_message(message: dict[str, Any]) -> None:
            if message.get("body") == b"first":
                leave.set()

        got = await asyncio.wait_for(call(App(s.port), on_message=on_message, disconnect=leave), 10)
        assert got.body == b"first" and not got.complete
        await asyncio.wait_for(s.closed.wait(), 10)  # the proxy let go of the service


async def test_an_unreachable_service_is_a_502(monkeypatch: pytest.MonkeyPatch) -> None:
    async with service(lambda r, c, n: ok()) as s:
        port = s.port
    app = App(port)

    async def gone(state: Any, task_id: str) -> str:
        return "the task ended (killed)"

    monkeypatch.setattr(proxy, "_why_gone", gone)
    got = await call(app)
    assert got.status == 502 and b"the task ended (killed)" in got.body
    # and the cache let go of the task: its next request is resolved again
    assert app.state["proxy_targets"].get((b"authorization:" + TOKEN, TASK, False)) is None


async def test_concurrent_misses_share_one_lookup_and_failures_are_not_kept() -> None:
    cache = proxy.TargetCache(ttl_s=3600)
    calls = 0
    release = asyncio.Event()
    target = proxy.Target(TASK, "NOTEBOOK", "127.0.0.1:1", 1)

    async def lookup() -> proxy.Target:
        nonlocal calls
        calls += 1
        await release.wait()
        return target

    key = (TOKEN, TASK, False)
    waiting = [asyncio.ensure_future(cache.resolve(key, lookup)) for _ in range(5)]
    await asyncio.sleep(0)
    waiting[0].cancel()  # a client that leaves does not cancel the others' lookup
    release.set()
    assert await asyncio.gather(*waiting[1:]) == [target] * 4
    assert calls == 1 and cache.get(key) == target

    async def refused() -> proxy.Target:
        raise Unauthenticated("no")

    other = (b"Bearer other", TASK, False)
    for _ in range(2):
        with pytest.raises(Unauthenticated):
            await cache.resolve(other, refused)
    assert cache.get(other) is None
    cache.forget_task(TASK)
    assert cache.get(key) is None


def test_the_access_log_leaves_out_proxied_requests() -> None:
    def record(path: str) -> logging.LogRecord:
        args = ("127.0.0.1:5", "GET", path, "1.1", 200)
        return logging.LogRecord("uvicorn.access", logging.INFO, "", 0, "%s", args, None)

    keep = NotProxied()
    assert keep.filter(record("/api/v1/me")) and keep.filter(record("/proxyish"))
    assert not keep.filter(record(f"/proxy/{TASK}/api/status?x=1"))
    assert log_config()["loggers"]["uvicorn.access"]["filters"] == ["not_proxied"]
