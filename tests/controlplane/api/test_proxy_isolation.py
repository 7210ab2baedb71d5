"""The proxy keeps the master's credentials from tasks (issue 38, finding 1): what a test service
receives through both proxy paths (the ASGI proxy and the front protocol), what of its answer
reaches the visitor, and where each kind of visitor is served (`proxy.plan`)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from controlplane.api import proxy, proxy_origin
from tests.controlplane.api.test_proxy_front import front, read_response
from tests.controlplane.api.test_proxy_upstream import (
    SECRET,
    TASK,
    App,
    call,
    ok,
    service,
)
from tests.controlplane.api.test_proxy_upstream import task_still_runs as task_still_runs

SECRETS = (b"admin-token", b"allocation-token", b"ticket-value")
# What a browser and a script send together: the UI's cookie, a task cookie, the task's own
# cookies, a bearer token, a task's allocation token in both of Determined's header names.
VISITOR = [
    (b"cookie", b"auth=admin-token; _xsrf=2|abc; resolute_proxy=ticket-value; username-x=1"),
    (b"grpc-metadata-x-allocation-token", b"Bearer allocation-token"),
    (b"x-allocation-token", b"Bearer allocation-token"),
    (b"x-resolute-csrf", b"1"),
]
TASK_COOKIES = b"_xsrf=2|abc; username-x=1"
ANSWER = ok(
    b"page",
    b"Set-Cookie: auth=bobs-token; Path=/\r\n"
    b"Set-Cookie: resolute_proxy=forged; Path=/\r\n"
    b"Set-Cookie: tossed=1; Domain=localhost; Path=/\r\n"
    b"Set-Cookie: _xsrf=2|def; Path=/proxy/x/\r\n",
)


def cached_app(port: int, headers: list[tuple[bytes, bytes]]) -> App:
    app = App(port)
    key = (proxy._credentials({"headers": headers}), TASK, False)
    app.state["proxy_targets"].put(
        key, proxy.Target(TASK, "NOTEBOOK", f"127.0.0.1:{port}", 1, SECRET)
    )
    return app


def assert_only_the_tasks_own(head: bytes) -> None:
    lowered = head.lower()
    for secret in SECRETS:
        assert secret not in lowered, head
    assert b"allocation-token" not in lowered and b"authorization" not in lowered
    assert b"x-resolute-csrf" not in lowered


def set_cookies(headers: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [v for k, v in headers if k.lower() == b"set-cookie"]


async def test_the_asgi_proxy_passes_no_credential_on() -> None:
    async with service(lambda r, c, n: ANSWER) as s:
        headers = [(b"authorization", b"Bearer user-token"), *VISITOR]
        got = await call(cached_app(s.port, headers), headers=VISITOR)
        assert got.status == 200 and got.body == b"page"
        [sent] = s.requests
        assert_only_the_tasks_own(sent.head)
        assert sent.header(b"cookie") == [TASK_COOKIES]
        assert sent.header(b"x-resolute-proxy-secret") == [SECRET.encode()]
        # the task may not set the master's cookies, nor any for a wider domain
        assert set_cookies(got.headers) == [b"_xsrf=2|def; Path=/proxy/x/"]
        # served on the master's origin: sandboxed
        csp = [v for k, v in got.headers if k == b"content-security-policy"]
        assert csp == [proxy_origin.SANDBOX_CSP]


async def test_the_front_protocol_passes_no_credential_on() -> None:
    async with service(lambda r, c, n: ANSWER) as s:
        raw = [(b"host", b"m"), (b"authorization", b"Bearer user-token"), *VISITOR]
        app = cached_app(s.port, raw)
        request = f"GET /proxy/{TASK}/lab HTTP/1.1\r\n".encode() + b"".join(
            k + b": " + v + b"\r\n" for k, v in raw
        )
        async with front(app) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(2):  # the first through the task, the second in callbacks alone
                writer.write(request + b"\r\n")
                head, body = await read_response(reader)
                assert body == b"page"
                cookies = [
                    line for line in head.split(b"\r\n") if line.lower().startswith(b"set-cookie")
                ]
                assert cookies == [b"Set-Cookie: _xsrf=2|def; Path=/proxy/x/"], head
                assert b"content-security-policy: " + proxy_origin.SANDBOX_CSP in head
            writer.close()
        assert len(s.requests) == 2
        for sent in s.requests:
            assert_only_the_tasks_own(sent.head)
            assert sent.header(b"cookie") == [TASK_COOKIES]


async def test_a_websocket_handshake_carries_no_credential() -> None:
    import websockets

    seen: list[Any] = []

    async def handler(ws: Any) -> None:
        seen.append(ws.request.headers)
        await ws.send("hi")
        await ws.wait_closed()  # the visitor leaves first

    async with websockets.serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        headers = [(b"authorization", b"Bearer user-token"), *VISITOR]
        app = cached_app(port, headers)
        app.state["proxy_targets"].put(
            (proxy._credentials({"headers": headers}), TASK, True),
            proxy.Target(TASK, "NOTEBOOK", f"127.0.0.1:{port}", 1, SECRET),
        )
        sent: list[dict[str, Any]] = []
        inbox = asyncio.Queue[dict[str, Any]]()
        await inbox.put({"type": "websocket.connect"})
        path = f"/proxy/{TASK}/ws"
        scope = {
            "type": "websocket", "path": path, "raw_path": path.encode(), "query_string": b"",
            "headers": headers, "client": ("127.0.0.9", 1), "litestar_app": app,
        }  # fmt: skip

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "websocket.send":
                await inbox.put({"type": "websocket.disconnect"})

        await asyncio.wait_for(proxy.serve(scope, inbox.get, send), 10)
    [got] = seen
    assert got.get("cookie") == TASK_COOKIES.decode()
    for name in ("authorization", "grpc-metadata-x-allocation-token", "x-allocation-token"):
        assert name not in got
    assert "admin-token" not in str(list(got.raw_items()))


# --- where each visitor is served --------------------------------------------------------------

NOW = 1_900_000_000.0


class Clock:
    @staticmethod
    def clock() -> Any:
        from datetime import UTC, datetime

        return datetime.fromtimestamp(NOW, UTC)


def state(domain: str | None = None) -> dict[str, Any]:
    return {"proxy_domain": domain, "api": Clock()}


def target(credential: str) -> proxy.Target:
    session = (7, "k" * 64, int(NOW) + 3600) if credential == "cookie" else None
    return proxy.Target(TASK, "NOTEBOOK", "127.0.0.1:1", 1, None, credential, session)


def seen(host: str, **extra: str) -> dict[bytes, str]:
    return {b"host": host, **{k.replace("_", "-").encode(): v for k, v in extra.items()}}


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "localhost:8080", "[::1]:8080"])
def test_a_browser_signed_in_by_cookie_is_sent_to_the_tasks_origin(host: str) -> None:
    got = proxy.plan(
        state(), seen(host), "GET", False, "http", f"/proxy/{TASK}/lab?a=1", target("cookie")
    )
    assert got.status == 302
    location = dict(got.headers)[b"location"].decode()
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}" == f"http://{TASK}.localhost:8080"
    assert parts.path == f"/proxy/{TASK}/lab"
    query = parse_qs(parts.query)
    assert query["a"] == ["1"]
    [ticket] = query[proxy_origin.TICKET_PARAM]
    signed = proxy_origin.read_signed(ticket, "ticket")
    assert signed is not None and signed.session_id == 7 and signed.task_id == TASK
    assert proxy_origin.verify(ticket, signed, "k" * 64, TASK, NOW)
    assert not proxy_origin.verify(ticket, signed, "k" * 64, TASK, NOW + 31)  # 30 s
    assert not proxy_origin.verify(ticket, signed, "j" * 64, TASK, NOW)
    assert not proxy_origin.verify(ticket, signed, "k" * 64, "other-task", NOW)


def test_a_configured_domain_and_https() -> None:
    got = proxy.plan(
        state("tasks.example.com"), seen("det.example.com"), "GET", False, "https",
        f"/proxy/{TASK}/", target("cookie"),
    )  # fmt: skip
    assert dict(got.headers)[b"location"].startswith(
        f"https://{TASK}.tasks.example.com/proxy/".encode()
    )


@pytest.mark.parametrize(("method", "is_ws"), [("POST", False), ("PUT", False), ("GET", True)])
def test_cookie_writes_and_sockets_on_the_masters_origin_are_refused(
    method: str, is_ws: bool
) -> None:
    got = proxy.plan(
        state(), seen("localhost:1"), method, is_ws, "http", f"/proxy/{TASK}/", target("cookie")
    )
    assert got.status == 403 and "own origin" in got.message


def test_without_a_task_origin_pages_are_sandboxed() -> None:
    # a remote master without proxy_domain, and every bearer client
    for host, credential in (
        ("det.example.com", "cookie"),
        ("localhost:1", "bearer"),
        ("m", "none"),
    ):
        got = proxy.plan(
            state(), seen(host), "GET", False, "http", f"/proxy/{TASK}/", target(credential)
        )
        assert got.status == 0
        assert dict(got.headers)[b"content-security-policy"] == proxy_origin.SANDBOX_CSP
        assert b"allow-same-origin" not in proxy_origin.SANDBOX_CSP


OWN = f"{TASK}.localhost:8080"
OTHER = "http://other.localhost:8080"


@pytest.mark.parametrize(
    ("method", "is_ws", "extra", "allowed"),
    [
        ("GET", False, {}, True),  # a tool
        ("GET", False, {"sec_fetch_site": "none", "sec_fetch_mode": "navigate"}, True),
        ("POST", False, {"origin": f"http://{OWN}", "sec_fetch_site": "same-origin"}, True),
        ("GET", True, {"origin": f"http://{OWN}", "sec_fetch_site": "same-origin"}, True),
        # a link from another task's page: the task opens in its own origin
        ("GET", False, {"sec_fetch_site": "same-site", "sec_fetch_mode": "navigate"}, True),
        # another task's page using this task's session
        ("GET", False, {"origin": OTHER, "sec_fetch_site": "same-site", "sec_fetch_mode": "cors"},
         False),
        ("POST", False,
         {"origin": OTHER, "sec_fetch_site": "same-site", "sec_fetch_mode": "navigate"}, False),
        ("GET", True, {"origin": OTHER, "sec_fetch_site": "same-site"}, False),
        ("GET", False, {"sec_fetch_site": "same-site", "sec_fetch_mode": "no-cors"}, False),
        ("GET", False, {"sec_fetch_site": "cross-site", "sec_fetch_mode": "no-cors"}, False),
        ("POST", False, {"origin": "null", "sec_fetch_site": "cross-site"}, False),
    ],
)  # fmt: skip
def test_a_tasks_cookie_serves_its_own_pages_only(
    method: str, is_ws: bool, extra: dict[str, str], allowed: bool
) -> None:
    got = proxy.plan(
        state(), seen(OWN, **extra), method, is_ws, "http", f"/proxy/{TASK}/", target("task_cookie")
    )
    assert (got.status == 0) is allowed, got
    if allowed:
        assert dict(got.headers)[b"content-security-policy"] == proxy_origin.TASK_CSP


def test_an_origin_serves_its_own_task_only() -> None:
    other = proxy.Target("other-task", "NOTEBOOK", "127.0.0.1:1", 1, None, "task_cookie")
    assert (
        proxy.plan(state(), seen(OWN), "GET", False, "http", "/proxy/other-task/", other).status
        == 404
    )
    # the UI's cookie does not count on a task origin, nor a task's cookie on the master's
    assert (
        proxy.plan(
            state(), seen(OWN), "GET", False, "http", f"/proxy/{TASK}/", target("cookie")
        ).status
        == 401
    )
    assert (
        proxy.plan(
            state(),
            seen("localhost:8080"),
            "GET",
            False,
            "http",
            f"/proxy/{TASK}/",
            target("task_cookie"),
        ).status
        == 401
    )


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (b"auth=t", None),
        (b"auth=t; resolute_proxy=x", None),
        (b"_xsrf=1; auth=t; username-a=2", b"_xsrf=1; username-a=2"),
        (b"authx=1;auth=2", b"authx=1"),
        (b" auth = t ;a=b", b"a=b"),
    ],
)
def test_stripped_cookies(value: bytes, kept: bytes | None) -> None:
    assert proxy_origin.strip_cookies(value) == kept


@pytest.mark.parametrize(
    ("host", "domain", "task"),
    [
        (f"{TASK}.localhost:8080", None, TASK),
        (f"{TASK}.LOCALHOST", None, TASK.lower()),
        ("localhost:8080", None, None),
        ("127.0.0.1:8080", None, None),
        (f"{TASK}.tasks.example.com", "tasks.example.com", TASK),
        (f"{TASK}.example.com", "tasks.example.com", None),
        (f"a.{TASK}.localhost", None, None),
    ],
)
def test_task_origins(host: str, domain: str | None, task: str | None) -> None:
    assert proxy_origin.task_of_host(host, domain) == task
