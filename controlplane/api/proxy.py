"""The master's reverse proxy to interactive tasks: `/proxy/{task id}/…`, HTTP and WebSocket.

A raw ASGI mount, since it must pass any method, path, body and WebSocket through unchanged.
Every request is authenticated like the API (a bearer token, or the `auth` cookie Determined's
web UI sets) and may reach only its owner's (or, for an admin, any) task; the one exception is a
shell's WebSocket, which the real client opens without credentials (`python -m
determined.cli.tunnel` runs without `--auth`): there the SSH key the master made for that shell
is what authenticates. Notebooks and TensorBoards are HTTP services mounted under the same
prefix (their base URL is `/proxy/{task id}/`), so the path is forwarded as received; a shell's
WebSocket carries raw TCP to its sshd; so does one to a `proxy_tcp` port of a task's
`environment.proxy_ports` (`/proxy/{task id}:{port}/`, proxy_services). Each request counts as
activity for the idle check. Who may reach what is proxy_lookup's; where and how a visitor is
served (the task's origin, a ticket, the sandbox) proxy_plan's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import datetime
from typing import Any
from urllib.parse import unquote

import websockets
from litestar import asgi
from litestar.datastructures import State
from sqlalchemy import select

from controlplane.api import proxy_origin
from controlplane.api import proxy_upstream as upstream
from controlplane.api.deps import ctx_of
from controlplane.api.errors import status_for
from controlplane.api.proxy_lookup import Target, _headers, _resolve, proxy_domain

# What the proxy's other modules and tests reach through this one.
from controlplane.api.proxy_lookup import TargetCache as TargetCache
from controlplane.api.proxy_lookup import _connect_address as _connect_address
from controlplane.api.proxy_lookup import _cookie_token as _cookie_token
from controlplane.api.proxy_lookup import _credentials as _credentials
from controlplane.api.proxy_lookup import _token as _token
from controlplane.api.proxy_plan import _GRPC as _GRPC
from controlplane.api.proxy_plan import PREFIX as PREFIX
from controlplane.api.proxy_plan import Plan as Plan
from controlplane.api.proxy_plan import evidence as evidence
from controlplane.api.proxy_plan import plan as plan
from controlplane.api.proxy_plan import trade_ticket as trade_ticket
from controlplane.db.models import Allocation, Command, Task
from controlplane.domain.errors import DomainError, InvalidArgument, NotFound

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

# The task's gate (harness.interactive) refuses connections without its secret in this header.
SECRET_HEADER = b"x-resolute-proxy-secret"
CLOSE_GRACE_TRIES, CLOSE_GRACE_STEP_S = 15, 0.2
_HOP_BY_HOP = frozenset(
    {
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "authorization", "content-length",
        "x-resolute-proxy-secret", "expect",
    } | proxy_origin.MASTER_HEADERS
)  # fmt: skip
# What the service's answer loses on the way (its framing is the ASGI server's to redo).
_RESPONSE_DROP = frozenset(h.encode() for h in _HOP_BY_HOP - {"content-length"})
_WS_DROP = _HOP_BY_HOP | {
    "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
    "sec-websocket-protocol", "origin",
}  # fmt: skip


class BadPath(InvalidArgument):
    """A proxy path that tries to leave its task's prefix."""


class ActivityBoard:
    """When each task was last reached through the proxy (read by the idle check)."""

    def __init__(self) -> None:
        self.last: dict[str, datetime] = {}

    def touch(self, task_id: str, now: datetime) -> None:
        self.last[task_id] = now


def split_path(raw_path: str) -> tuple[str, str]:
    """(task id, rest) of `/proxy/{task id}/rest`; refuses any path that could leave the task's
    prefix once decoded (`..`, `.`, an encoded slash or backslash, NUL)."""
    if not raw_path.startswith(PREFIX):
        raise NotFound("not a proxy path: use /proxy/{task id}/")
    tail = raw_path[len(PREFIX) :]
    task_id, _, rest = tail.partition("/")
    for segment in tail.split("/"):
        text = unquote(segment)
        if text in (".", "..") or any(c in text for c in "\x00/\\"):
            raise BadPath("the path may not leave the task's prefix (no '..', '.', NUL or %2F)")
    if not task_id or len(task_id) > 128:
        raise NotFound("no task id in the proxy path")
    return task_id, rest


async def _task_gone(state: State, task_id: str) -> str | None:
    """Why the task's service went away (None: it still runs). A task found gone leaves the
    target cache, so its next request is answered from the database (404) at once."""
    why = await _why_gone(state, task_id)
    if why is not None:
        state["proxy_targets"].forget_task(task_id)
    return why


async def _why_gone(state: State, task_id: str) -> str | None:
    async with ctx_of(state).sessionmaker() as session:
        row = (
            await session.execute(
                select(Task.end_time, Allocation.exit_reason, Allocation.end_time, Command.state)
                .outerjoin(Allocation, Allocation.task_id == Task.task_id)
                .outerjoin(Command, Command.task_id == Task.task_id)
                .where(Task.task_id == task_id)
                .order_by(Allocation.start_time.desc())
            )
        ).first()
    if row is None:
        return "the task no longer exists"
    if row[0] is not None or row[2] is not None:
        return f"the task ended ({row[1] or 'no reason recorded'})"
    if row[3] == "TERMINATING":
        return "the task ended (killed)"
    return None


async def _why_closed(state: State, task_id: str) -> str | None:
    """`_task_gone`, allowing the agent a moment to report the exit it has just seen: a
    service's socket closes before the master hears that its task ended."""
    for _ in range(CLOSE_GRACE_TRIES):
        why = await _task_gone(state, task_id)
        if why is not None:
            return why
        await asyncio.sleep(CLOSE_GRACE_STEP_S)
    return None


# --- HTTP --------------------------------------------------------------------------------------


async def _error(send: Send, status: int, message: str, grpc: int = 13) -> None:
    body = json.dumps(
        {"code": grpc, "message": message, "error": {"error": message}, "details": []}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _upstream_headers(
    scope: Scope, drop: frozenset[str], secret: str | None = None
) -> list[tuple[bytes, bytes]]:
    out = []
    for k, v in scope.get("headers", []):
        name = k.decode("latin-1").lower()
        if name in drop:
            continue
        if name == "cookie":  # the master's cookies are the visitor's credentials: never sent
            kept = proxy_origin.strip_cookies(v)
            if kept is None:
                continue
            v = kept
        out.append((k, v))
    if secret:
        out.append((SECRET_HEADER, secret.encode()))
    client = scope.get("client")
    if client:
        out.append((b"x-forwarded-for", str(client[0]).encode()))
    return out


def _target_path(scope: Scope) -> bytes:
    raw: bytes = scope.get("raw_path") or scope["path"].encode()
    query: bytes = scope.get("query_string") or b""
    return raw + b"?" + query if query else raw


def _request_head(method: str, target: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    # The ASGI server's parser has checked every piece: none holds a CR or LF.
    parts = [method.encode(), b" ", target, b" HTTP/1.1\r\n"]
    for name, value in headers:
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            with contextlib.suppress(ValueError):
                return int(value)
    return None


async def _until_disconnect(receive: Receive, conn: upstream.Connection) -> None:
    # A streamed answer (an event stream, a long download) must stop when its client leaves:
    # the ASGI server's send() then does nothing, so only receive() tells.
    while (await receive())["type"] != "http.disconnect":
        pass
    conn.abort()


def response_headers(
    headers: list[tuple[bytes, bytes]], added: tuple[tuple[bytes, bytes], ...]
) -> list[tuple[bytes, bytes]]:
    """The service's answer's headers as the visitor gets them: without hop-by-hop ones and
    without cookies it may not set (proxy_origin.keep_set_cookie), with the plan's added."""
    out = [
        (k, v)
        for k, v in headers
        if k.lower() not in _RESPONSE_DROP
        and (k.lower() != b"set-cookie" or proxy_origin.keep_set_cookie(v))
    ]
    out.extend(added)
    return out


async def _http(
    state: State, scope: Scope, receive: Receive, send: Send, t: Target, added: Plan = Plan()
) -> None:
    method: str = scope["method"]
    first = await receive()
    if first["type"] == "http.disconnect":
        return
    body: bytes = first.get("body", b"")
    streamed = bool(first.get("more_body"))
    headers = _upstream_headers(scope, _HOP_BY_HOP, t.secret)
    headers.append((b"host", t.address.encode()))
    # A body that came in one piece is sent with its length; a longer one streams through,
    # with the client's declared length or else chunked.
    length = _declared_length(scope) if streamed else len(body)
    if length is None:
        headers.append((b"transfer-encoding", b"chunked"))
    elif length or method not in ("GET", "HEAD", "OPTIONS", "DELETE"):
        headers.append((b"content-length", b"%d" % length))
    head = _request_head(method, _target_path(scope), headers)
    conn = await _exchange(state, t, receive, send, method, head, body, streamed, length is None)
    if conn is None:
        return
    pool: upstream.Pool = state["proxy_pool"]
    watch: asyncio.Future[None] | None = None
    try:
        out = response_headers(conn.headers, added.headers)
        await send({"type": "http.response.start", "status": conn.status, "headers": out})
        while True:
            if conn.chunks:
                data = conn.take()
                last = conn.done and not conn.chunks
                await send({"type": "http.response.body", "body": data, "more_body": not last})
                if last:
                    return
            elif conn.done:
                await send({"type": "http.response.body", "body": b""})
                return
            elif conn.closed or conn.error is not None:
                # Cut short: end without the final message, so the server closes the client's
                # connection instead of passing a truncated body off as complete.
                return
            else:
                if watch is None:
                    watch = asyncio.ensure_future(_until_disconnect(receive, conn))
                await conn.wait()
    finally:
        if watch is not None:
            watch.cancel()
        pool.release(conn)


async def _exchange(
    state: State,
    t: Target,
    receive: Receive,
    send: Send,
    method: str,
    head: bytes,
    body: bytes,
    streamed: bool,
    chunked: bool,
) -> upstream.Connection | None:
    """Send the request; the connection once the response's head has arrived (None: an error
    was sent instead). A kept-alive connection that the service had closed before answering
    is replaced once, for a request that may be repeated."""
    pool: upstream.Pool = state["proxy_pool"]
    for attempt in (1, 2):
        try:
            conn = await pool.connect(t.dial, method == "HEAD", fresh=attempt == 2)
        except upstream.UpstreamTimeout as exc:
            await _error(send, 504, f"the task's service did not answer in time: {exc}")
            return None
        except upstream.UpstreamError as exc:
            why = await _task_gone(state, t.task_id)
            await _error(send, 502, why or f"the task's service did not answer: {exc}")
            return None
        try:
            if not streamed:
                await conn.write(head + body)
            else:
                await conn.write(head + (_chunk(body) if chunked else body))
                more = True
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        conn.abort()
                        return None
                    data, more = message.get("body", b""), bool(message.get("more_body"))
                    await conn.write(_chunk(data) if chunked else data)
                if chunked:
                    await conn.write(b"0\r\n\r\n")
            while not (conn.head_done or conn.closed or conn.error is not None):
                await conn.wait()
        except upstream.UpstreamError:
            pass
        if conn.head_done:
            return conn
        conn.abort()
        if (
            attempt == 1 and conn.reused and not conn.answered and not streamed
            and method in upstream.IDEMPOTENT
        ):  # fmt: skip
            continue
        why = conn.error or await _task_gone(state, t.task_id)
        await _error(send, 502, why or "the task's service closed the connection unanswered")
        return None
    return None


# --- WebSocket ---------------------------------------------------------------------------------


async def _ws_refuse(send: Send, code: int, reason: str) -> None:
    await send({"type": "websocket.close", "code": code, "reason": reason[:120]})


async def _client_to(receive: Receive, forward: Callable[[bytes | str], Awaitable[None]]) -> str:
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return "client"
        data = message.get("bytes")
        await forward(data if data is not None else message.get("text") or "")


async def _ws_http(state: State, scope: Scope, receive: Receive, send: Send, t: Target) -> None:
    url = f"ws://{t.dial}{_target_path(scope).decode('latin-1')}"
    protocols = [p.strip() for p in _headers(scope).get("sec-websocket-protocol", "").split(",")]
    protocols = [p for p in protocols if p]
    try:
        upstream = await websockets.connect(
            url,
            additional_headers=[
                (k.decode("latin-1"), v.decode("latin-1"))
                for k, v in _upstream_headers(scope, _WS_DROP, t.secret)
            ],
            subprotocols=protocols or None,  # type: ignore[arg-type]
            max_size=None,
            ping_interval=None,
            compression=None,
        )
    except (OSError, websockets.WebSocketException) as exc:
        await _ws_refuse(send, 1011, await _task_gone(state, t.task_id) or f"upstream: {exc}")
        return
    await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol})
    board: ActivityBoard = state["proxy_activity"]

    async def up(data: bytes | str) -> None:
        board.touch(t.task_id, ctx_of(state).clock())
        await upstream.send(data)

    async def down() -> str:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for data in upstream:
                key = "bytes" if isinstance(data, bytes) else "text"
                await send({"type": "websocket.send", key: data})
        return "upstream"

    await _pump(state, send, t, _client_to(receive, up), down(), upstream.close)


async def _ws_tcp(state: State, scope: Scope, receive: Receive, send: Send, t: Target) -> None:
    host, _, port = t.dial.rpartition(":")
    try:
        reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    except OSError as exc:
        await _ws_refuse(send, 1011, await _task_gone(state, t.task_id) or f"upstream: {exc}")
        return
    await send({"type": "websocket.accept"})

    async def up(data: bytes | str) -> None:
        writer.write(data.encode() if isinstance(data, str) else data)
        await writer.drain()

    async def down() -> str:
        while chunk := await reader.read(65536):
            await send({"type": "websocket.send", "bytes": chunk})
        return "upstream"

    async def close() -> None:
        writer.close()

    await _pump(state, send, t, _client_to(receive, up), down(), close)


async def _pump(
    state: State,
    send: Send,
    t: Target,
    upward: Awaitable[str],
    downward: Awaitable[str],
    close: Callable[[], Awaitable[None]],
) -> None:
    tasks = [asyncio.ensure_future(upward), asyncio.ensure_future(downward)]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    ended_by = next(iter(done)).result() if not next(iter(done)).exception() else "upstream"
    with contextlib.suppress(Exception):
        await close()
    if ended_by == "client":
        return
    why = await _why_closed(state, t.task_id)
    reason = why or "the task's service closed the connection"
    with contextlib.suppress(Exception):
        await send(
            {"type": "websocket.close", "code": 1011 if why else 1000, "reason": reason[:120]}
        )


# --- the mount ---------------------------------------------------------------------------------


async def serve(scope: Scope, receive: Receive, send: Send) -> None:
    """One proxied request or WebSocket (`scope["litestar_app"]` set)."""
    state: State = scope["litestar_app"].state
    is_ws = scope["type"] == "websocket"
    raw = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
    if is_ws:
        await receive()  # websocket.connect, before we accept or refuse
    query = (scope.get("query_string") or b"").decode("latin-1")
    url = raw + ("?" + query if query else "")
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    seen = evidence(scope.get("headers", []))
    try:
        task_id, _ = split_path(raw)
        traded = None
        host_task = proxy_origin.task_of_host(seen.get(b"host"), proxy_domain(state))
        if not is_ws and host_task == task_id:
            traded = await trade_ticket(state, task_id, scheme, url)
        if traded is not None:
            how = traded
        else:
            target = await _resolve(state, scope, task_id, is_ws)
            how = plan(state, seen, scope.get("method", "GET"), is_ws, scheme, url, target)
    except DomainError as exc:
        status, grpc = status_for(exc)
        if is_ws:
            await _ws_refuse(send, 4000 + status, exc.message)
        else:
            await _error(send, status, exc.message, grpc)
        return
    if how.status:
        if is_ws:
            await _ws_refuse(send, 4000 + how.status, how.message)
        elif how.status == 302:
            headers = list(how.headers)
            await send({"type": "http.response.start", "status": 302, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
        else:
            await _error(send, how.status, how.message, _GRPC.get(how.status, 13))
        return
    state["proxy_activity"].touch(target.task_id, ctx_of(state).clock())
    if not is_ws:
        await _http(state, scope, receive, send, target, how)
    elif target.tcp or (target.port is None and target.task_type == "SHELL"):
        await _ws_tcp(state, scope, receive, send, target)
    else:
        await _ws_http(state, scope, receive, send, target)


def task_origin_of(scope: Scope, state: State) -> str | None:
    """The task whose origin a request (of any path) was addressed to, if any."""
    for name, value in scope.get("headers", []):
        if name == b"host":
            return proxy_origin.task_of_host(value.decode("latin-1"), proxy_domain(state))
    return None


async def not_here(scope: Scope, receive: Receive, send: Send) -> None:
    """Anything but `/proxy/{task}/…` asked of a task's origin: 404, the API and the UI are
    not there (a task's page must not reach them as its own origin)."""
    message = "a task's origin serves only /proxy/{its task id}/"
    if scope["type"] == "websocket":
        await receive()
        await _ws_refuse(send, 4404, message)
    else:
        await _error(send, 404, message, 5)


@asgi("/proxy", is_mount=True, copy_scope=True)
async def proxy(scope: Scope, receive: Receive, send: Send) -> None:
    # The route, for the API's tables; the master's app (controlplane.app) hands `/proxy/…`
    # to `serve` before Litestar's router, whose per-request work the proxy does not need.
    await serve(scope, receive, send)


ROUTES = [proxy]
