"""The master's reverse proxy to interactive tasks: `/proxy/{task id}/…`, HTTP and WebSocket.

A raw ASGI mount, since it must pass any method, path, body and WebSocket through unchanged.
Every request is authenticated like the API (a bearer token, or the `auth` cookie Determined's
web UI sets) and may reach only its owner's (or, for an admin, any) task; the one exception is a
shell's WebSocket, which the real client opens without credentials (`python -m
determined.cli.tunnel` runs without `--auth`): there the SSH key the master made for that shell
is what authenticates. Notebooks and TensorBoards are HTTP services mounted under the same
prefix (their base URL is `/proxy/{task id}/`), so the path is forwarded as received; a shell's
WebSocket carries raw TCP to its sshd. Each request counts as activity for the idle check.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from datetime import datetime
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import unquote

import httpcore
import websockets
from litestar import asgi
from litestar.datastructures import State
from sqlalchemy import select

from controlplane.api.deps import ctx_of
from controlplane.api.errors import status_for
from controlplane.db.models import Allocation, Command, Task
from controlplane.domain.errors import (
    DomainError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
)
from controlplane.services import auth

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

PREFIX = "/proxy/"
# The task's gate (harness.interactive) refuses connections without its secret in this header.
SECRET_HEADER = b"x-resolute-proxy-secret"
CLOSE_GRACE_TRIES, CLOSE_GRACE_STEP_S = 15, 0.2
INTERACTIVE_TYPES = ("NOTEBOOK", "TENSORBOARD", "SHELL")
_HOP_BY_HOP = frozenset(
    {
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "authorization", "content-length",
        "x-resolute-proxy-secret",
    }
)  # fmt: skip
_WS_DROP = _HOP_BY_HOP | {
    "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
    "sec-websocket-protocol", "origin",
}  # fmt: skip


class BadPath(InvalidArgument):
    """A proxy path that tries to leave its task's prefix."""


@dataclass(frozen=True)
class Target:
    task_id: str
    task_type: str
    address: str
    owner_id: int
    secret: str | None = None


class TargetCache:
    """Resolved (credentials, task) -> target for a moment: a page load is dozens of requests,
    and a database round trip for each would double the proxy's cost. Only successes are kept,
    for `ttl_s`; a task that ends is refused within that time (its service is gone anyway)."""

    def __init__(self, ttl_s: float = 2.0, max_entries: int = 10_000) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[tuple[str, str, bool], tuple[float, Target]] = {}

    def get(self, key: tuple[str, str, bool]) -> Target | None:
        found = self._entries.get(key)
        if found is None or found[0] < time.monotonic():
            return None
        return found[1]

    def put(self, key: tuple[str, str, bool], target: Target) -> None:
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + self.ttl_s, target)


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


def _cookie_token(headers: dict[str, str]) -> str | None:
    raw = headers.get("cookie")
    if not raw:
        return None
    try:
        jar = SimpleCookie(raw)
    except CookieError:
        return None
    morsel = jar.get("auth")
    return morsel.value if morsel is not None and morsel.value else None


def _token(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return _cookie_token(headers)


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers", []):
        name = k.decode("latin-1").lower()
        value = v.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out and name != "cookie" else value
    return out


async def _resolve(state: State, scope: Scope, task_id: str, is_ws: bool) -> Target:
    cache: TargetCache = state["proxy_targets"]
    key = (_token(_headers(scope)) or "", task_id, is_ws)
    target = cache.get(key)
    if target is None:
        target = await _lookup(state, scope, task_id, is_ws)
        cache.put(key, target)
    return target


async def _lookup(state: State, scope: Scope, task_id: str, is_ws: bool) -> Target:
    ctx = ctx_of(state)
    headers = _headers(scope)
    async with ctx.sessionmaker() as session:
        row = (
            await session.execute(
                select(
                    Task.task_type,
                    Task.owner_id,
                    Task.end_time,
                    Allocation.proxy_address,
                    Allocation.proxy_secret,
                )
                .outerjoin(
                    Allocation,
                    (Allocation.task_id == Task.task_id) & Allocation.end_time.is_(None),
                )
                .where(Task.task_id == task_id)
            )
        ).first()
        public_shell = is_ws and row is not None and row.task_type == "SHELL"
        token = _token(headers)
        user = None
        if token is not None:
            user = await auth.user_for_token(session, token, now=ctx.clock())
        elif not public_shell:
            raise Unauthenticated("authentication required: log in with `det user login`")
    if row is None or row.task_type not in INTERACTIVE_TYPES:
        raise NotFound(f"interactive task {task_id} not found")
    if user is not None and not (user.admin or user.id == row.owner_id):
        raise PermissionDenied(f"only the owner of task {task_id} or an admin may reach it")
    if row.end_time is not None:
        raise NotFound(f"task {task_id} has ended")
    if not row.proxy_address:
        raise Unavailable(f"task {task_id} is not serving yet; wait until it is ready")
    return Target(task_id, row.task_type, row.proxy_address, row.owner_id, row.proxy_secret)


async def _task_gone(state: State, task_id: str) -> str | None:
    """Why the task's service went away (None: it still runs)."""
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


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _upstream_headers(
    scope: Scope, drop: frozenset[str], secret: str | None = None
) -> list[tuple[bytes, bytes]]:
    out = [(k, v) for k, v in scope.get("headers", []) if k.decode("latin-1").lower() not in drop]
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


async def _http(state: State, scope: Scope, receive: Receive, send: Send, t: Target) -> None:
    # httpcore (httpx's transport) directly: the proxy needs no more than a connection pool,
    # and skipping httpx's request and response models is a third of the proxy's own cost.
    pool: httpcore.AsyncConnectionPool = state["proxy_pool"]
    host, _, port = t.address.rpartition(":")
    headers = _upstream_headers(scope, _HOP_BY_HOP, t.secret)
    headers.append((b"host", t.address.encode()))
    body = await _read_body(receive)
    if body or scope["method"] not in ("GET", "HEAD", "OPTIONS", "DELETE"):
        headers.append((b"content-length", b"%d" % len(body)))
    request = httpcore.Request(
        scope["method"],
        httpcore.URL(
            scheme=b"http", host=host.encode(), port=int(port), target=_target_path(scope)
        ),
        headers=headers,
        content=body,
        extensions={"timeout": {"connect": 10.0, "pool": 30.0}},
    )
    try:
        upstream = await pool.handle_async_request(request)
    except httpcore.TimeoutException as exc:
        await _error(send, 504, f"the task's service did not answer in time: {exc}")
        return
    except (httpcore.ConnectError, httpcore.NetworkError, httpcore.ProtocolError) as exc:
        why = await _task_gone(state, t.task_id)
        await _error(send, 502, why or f"the task's service did not answer: {exc}")
        return
    try:
        out = [
            (k, v) for k, v in upstream.headers
            if k.lower().decode("latin-1") not in _HOP_BY_HOP or k.lower() == b"content-length"
        ]  # fmt: skip
        await send({"type": "http.response.start", "status": upstream.status, "headers": out})
        async for chunk in upstream.aiter_stream():  # type: ignore[union-attr]
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    except (httpcore.NetworkError, httpcore.ProtocolError):
        await send({"type": "http.response.body", "body": b""})
    finally:
        await upstream.aclose()


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
    url = f"ws://{t.address}{_target_path(scope).decode('latin-1')}"
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
    host, _, port = t.address.rpartition(":")
    try:
        reader, writer = await asyncio.open_connection(host, int(port))
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


@asgi("/proxy", is_mount=True, copy_scope=True)
async def proxy(scope: Scope, receive: Receive, send: Send) -> None:
    state: State = scope["litestar_app"].state
    is_ws = scope["type"] == "websocket"
    raw = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
    if is_ws:
        await receive()  # websocket.connect, before we accept or refuse
    try:
        task_id, _ = split_path(raw)
        target = await _resolve(state, scope, task_id, is_ws)
    except DomainError as exc:
        status, grpc = status_for(exc)
        if is_ws:
            await _ws_refuse(send, 4000 + status, exc.message)
        else:
            await _error(send, status, exc.message, grpc)
        return
    state["proxy_activity"].touch(task_id, ctx_of(state).clock())
    if not is_ws:
        await _http(state, scope, receive, send, target)
    elif target.task_type == "SHELL":
        await _ws_tcp(state, scope, receive, send, target)
    else:
        await _ws_http(state, scope, receive, send, target)


ROUTES = [proxy]
