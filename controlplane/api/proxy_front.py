"""The master's listening protocol: proxied HTTP requests outside uvicorn and ASGI.

uvicorn's per-request work (its parser's callbacks, the scope, the request task's ASGI
messages) was most of the master's CPU for a proxied request, and on a small machine that CPU
is the notebook's lost throughput. So each connection starts here: while its requests are plain
HTTP/1.1 `/proxy/…` requests with no body or one of known length, they are authenticated
exactly as `proxy.serve` does (same cache, same rules, same errors) and passed on as bytes, the
response relayed as the service's own bytes (`proxy_upstream`'s relay mode). The first request
that is anything else (the API, a WebSocket, a chunked or `Expect` body, HTTP/1.0, a head
httptools refuses) hands the connection, with the bytes read so far, to uvicorn's protocol for
good, so the API and the ASGI proxy behave as before. TLS is the transport's business: this
protocol sees plain bytes either way.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import httptools
from litestar import Litestar
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from controlplane.api import proxy, proxy_origin
from controlplane.api import proxy_upstream as upstream
from controlplane.api.deps import ctx_of
from controlplane.api.errors import status_for
from controlplane.domain.errors import DomainError

MAX_HEAD = 64 * 1024
# Client bytes held while a request is served (pipelined requests, a body not yet sent on).
HIGH_WATER = 256 * 1024
_DROP = frozenset(h.encode() for h in proxy._HOP_BY_HOP)
# What a relayed response loses: hop-by-hop headers (its framing stays: its body passes as is).
_RESPONSE_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te",
     b"upgrade", proxy.SECRET_HEADER}
)  # fmt: skip
_BODYLESS = (b"GET", b"HEAD", b"OPTIONS", b"DELETE")


class Head:
    """A request head, as httptools reads it."""

    def __init__(self) -> None:
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []  # names lowercased, as ASGI has them
        self.complete = False
        self.keep_alive = False
        self.length = 0
        self.plain = True  # no chunked body, no Expect: what the lean path serves
        self.parser = httptools.HttpRequestParser(self)

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        self.headers.append((name, value))
        if name == b"content-length":
            self.length = int(value)  # llhttp has checked it is one number
        elif name in (b"transfer-encoding", b"expect"):
            self.plain = False

    def on_headers_complete(self) -> None:
        self.complete = True
        # Asked here: once the message completes, the parser has reset and answers False.
        self.keep_alive = self.parser.should_keep_alive()


def read_head(data: bytes) -> Head | None:
    """The head if the lean path serves it, else None (uvicorn's to answer)."""
    head = Head()
    try:
        head.parser.feed_data(data)
    except (httptools.HttpParserError, httptools.HttpParserUpgrade, ValueError):
        return None
    if not (head.complete and head.plain and head.parser.get_http_version() == "1.1"):
        return None
    return head


def error_response(status: int, message: str, grpc: int = 13, close: bool = False) -> bytes:
    """`proxy._error`'s answer, as bytes."""
    body = json.dumps(
        {"code": grpc, "message": message, "error": {"error": message}, "details": []}
    ).encode()
    return b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n%s" % (
        status,
        HTTPStatus(status).phrase.encode(),
        len(body),
        b"connection: close\r\n" if close else b"",
        body,
    )


def _redirect(headers: tuple[tuple[bytes, bytes], ...], close: bool) -> bytes:
    lines = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    return b"HTTP/1.1 302 Found\r\n%s%s\r\n" % (lines, b"connection: close\r\n" if close else b"")


class Front(asyncio.Protocol):
    """One client connection, until it is handed to uvicorn."""

    def __init__(
        self,
        app: Litestar,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.state = app.state
        self.config, self.server_state, self.app_state = config, server_state, app_state
        self.loop = _loop or asyncio.get_event_loop()
        self.transport: asyncio.Transport | None = None
        self.client_host = ""
        self.buffer = bytearray()
        self.busy = False  # a request is being served: later bytes wait in the buffer
        self.lost = False
        self.closing = False  # close once the request in flight is answered
        self.paused = False
        self.task: asyncio.Task[None] | None = None
        self.conn: upstream.Connection | None = None
        self.close_after = False  # the response in flight ends only with the connection
        self.upstream_paused = False  # the client reads slower than the service answers
        self._more: asyncio.Future[None] | None = None  # a body's bytes awaited
        self.quick: Head | None = None  # the request `_quick` serves
        self.added: tuple[tuple[bytes, bytes], ...] = ()  # headers the answer in flight gets
        self.scheme = "http"
        self.quick_body = b""
        self._idle: asyncio.TimerHandle | None = None

    # --- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server_state.connections.add(self)
        if transport.get_extra_info("sslcontext") is not None:
            self.scheme = "https"
        peer = transport.get_extra_info("peername")
        self.client_host = str(peer[0]) if isinstance(peer, tuple) and peer else ""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.busy:
            self._wake()
            if len(self.buffer) > HIGH_WATER and not self.paused and self.transport is not None:
                self.paused = True
                self.transport.pause_reading()
            return
        self._next()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.server_state.connections.discard(self)
        self._cancel_idle()
        if self.conn is not None:  # a response its client no longer waits for
            self.conn.abort()
        self._wake()

    def pause_writing(self) -> None:
        conn = self.conn
        if conn is not None and conn.transport is not None and not conn.closed:
            self.upstream_paused = True
            conn.transport.pause_reading()

    def resume_writing(self) -> None:
        conn = self.conn
        if self.upstream_paused and conn is not None and conn.transport is not None:
            self.upstream_paused = False
            if not conn.closed:
                conn.transport.resume_reading()

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown: close now if idle, else after the current answer."""
        if self.busy:
            self.closing = True
        elif self.transport is not None:
            self.transport.close()

    # --- the relay's side (upstream.Relay) -----------------------------------------------------

    def relay_head(self, conn: upstream.Connection, head: bytes) -> bytes:
        # A body that ends with the service's connection ends the client's too.
        self.close_after = not conn.framed and not conn.done
        if not head.startswith(b"HTTP/1.1 ") or any(
            name.lower() in _RESPONSE_HOP
            or (name.lower() == b"set-cookie" and not proxy_origin.keep_set_cookie(value))
            for name, value in conn.headers
        ):
            head = self._clean(conn, head)
        extra = b"".join(name + b": " + value + b"\r\n" for name, value in self.added)
        if self.close_after or self.closing:
            extra += b"connection: close\r\n"
        return head[:-2] + extra + b"\r\n" if extra else head

    def relay_body(self, data: bytes) -> None:
        if self.transport is not None and not self.lost:
            self.transport.write(data)

    @staticmethod
    def _clean(conn: upstream.Connection, head: bytes) -> bytes:
        reason = head.split(b"\r\n", 1)[0].split(b" ", 2)[2:]
        parts = [b"HTTP/1.1 %d %s\r\n" % (conn.status, reason[0] if reason else b"")]
        for name, value in conn.headers:
            lowered = name.lower()
            if lowered not in _RESPONSE_HOP and (
                lowered != b"set-cookie" or proxy_origin.keep_set_cookie(value)
            ):
                parts += (name, b": ", value, b"\r\n")
        parts.append(b"\r\n")
        return b"".join(parts)

    # --- requests ------------------------------------------------------------------------------

    def _next(self) -> None:
        """Start on the request at the buffer's front, if its head is all here."""
        buffer = self.buffer
        if not buffer or self.lost:
            return
        self._cancel_idle()
        end = buffer.find(b"\r\n\r\n")
        line_end = buffer.find(b"\n")
        if line_end >= 0:
            target = buffer[:line_end].split(b" ", 2)
            if len(target) < 2 or not target[1].startswith(b"/proxy/"):
                self._hand_over()
                return
        # A head ended by bare newlines is left to uvicorn, whose parser says what it is:
        # split here at CRLFCRLF, it could hide a second request inside the first.
        if end < 0 or b"\n\n" in buffer[:end]:
            if end >= 0 or len(buffer) > MAX_HEAD or b"\n\n" in buffer:
                self._hand_over()
            return
        head = read_head(bytes(buffer[: end + 4]))
        if head is None:
            self._hand_over()
            return
        del buffer[: end + 4]
        self.busy = True
        if not self._quick(head):
            self.task = self.loop.create_task(self._serve(head))

    def _quick(self, head: Head) -> bool:
        """Serve the request in callbacks alone, if it needs no waiting: its body all here, its
        target in the cache, an idle connection to it in the pool (a page's requests, mostly).
        Anything less, and the task of `_serve` does it."""
        length = head.length
        if length > len(self.buffer) or proxy_origin.TICKET_PARAM.encode() in head.url:
            return False
        try:
            task_id, _ = proxy.split_path(head.url.split(b"?", 1)[0].decode("latin-1"))
        except DomainError:
            return False
        key = (proxy._credentials({"headers": head.headers}), task_id, False)
        target: proxy.Target | None = self.state["proxy_targets"].get(key)
        if target is None:
            return False
        method = head.parser.get_method()
        how = self._plan(head, method, target)
        if how.status:
            return False
        pool: upstream.Pool = self.state["proxy_pool"]
        conn = pool.idle(target.dial, method == b"HEAD", self)
        if conn is None or conn.transport is None:
            return False
        self.added = how.headers
        self.state["proxy_activity"].touch(target.task_id, ctx_of(self.state).clock())
        self.close_after = False
        self.conn, self.quick = conn, head
        self.quick_body = bytes(self.buffer[:length])
        del self.buffer[:length]
        conn.on_end = self._quick_end
        conn.transport.write(self._request_head(head, target, method) + self.quick_body)
        return True

    def _quick_end(self, conn: upstream.Connection) -> None:
        head, body = self.quick, self.quick_body
        assert head is not None
        self.conn, self.quick, self.quick_body = None, None, b""
        self._release(conn)
        if conn.head_done or self.lost:
            self.busy = False
            keep = conn.done and not self.lost  # else cut short: the client's connection closes
            self._settle(keep and head.keep_alive and not self.closing and not self.close_after)
            return
        # No answer at all: the task decides, as for any request, between a fresh connection
        # and the 502 that says why.
        self.buffer[:0] = body
        self.task = self.loop.create_task(self._serve(head, failed=conn))

    def _release(self, conn: upstream.Connection) -> None:
        if self.upstream_paused and conn.transport is not None and not conn.closed:
            conn.transport.resume_reading()  # else it would sit paused in the pool
        self.upstream_paused = False
        self.state["proxy_pool"].release(conn)

    def _hand_over(self) -> None:
        """The connection is uvicorn's from here, with what it has sent so far."""
        transport = self.transport
        assert transport is not None
        self._cancel_idle()
        self.server_state.connections.discard(self)
        protocol = HttpToolsProtocol(
            config=self.config,
            server_state=self.server_state,
            app_state=self.app_state,
            _loop=self.loop,
        )
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        if self.paused:
            self.paused = False
            transport.resume_reading()
        data, self.buffer = bytes(self.buffer), bytearray()
        protocol.data_received(data)

    async def _serve(self, head: Head, failed: upstream.Connection | None = None) -> None:
        keep = False
        try:
            keep = await self._proxy(head, failed)
        except Exception:  # a bug must not leave the client waiting: it gets a closed socket
            keep = False
            raise
        finally:
            self.task, self.conn, self.busy = None, None, False
            self._settle(keep and head.keep_alive and not self.closing and not self.close_after)

    def _settle(self, keep: bool) -> None:
        transport = self.transport
        if transport is None or self.lost:
            return
        if not keep:
            transport.close()
            return
        if self.paused:
            self.paused = False
            transport.resume_reading()
        if self.buffer:
            self._next()
        else:
            self._idle = self.loop.call_later(self.config.timeout_keep_alive, self._expire)

    def _expire(self) -> None:
        if not self.busy and not self.buffer and self.transport is not None:
            self.transport.close()

    def _cancel_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _answer(self, data: bytes) -> None:
        if self.transport is not None and not self.lost:
            self.transport.write(data)

    async def _proxy(self, head: Head, failed: upstream.Connection | None = None) -> bool:
        """Serve one request (`failed`: the connection `_quick` sent it on, closed unanswered);
        whether the connection may carry another."""
        self.close_after = False
        path = head.url.split(b"?", 1)[0].decode("latin-1")
        method = head.parser.get_method()
        try:
            task_id, _ = proxy.split_path(path)
            url = head.url.decode("latin-1")
            seen = proxy.evidence(head.headers)
            how = None
            if proxy_origin.task_of_host(seen.get(b"host"), proxy.proxy_domain(self.state)) == (
                task_id
            ):
                how = await proxy.trade_ticket(self.state, task_id, self.scheme, url)
            if how is None:
                scope = {"headers": head.headers}
                target = await proxy._resolve(self.state, scope, task_id, False)
                how = self._plan(head, method, target)
        except DomainError as exc:
            # The body must be read (or dropped) before the next request: one whole in the
            # buffer can be; a longer one cannot, and the connection then closes.
            whole = len(self.buffer) >= head.length
            status, grpc = status_for(exc)
            self._answer(error_response(status, exc.message, grpc, close=not whole))
            del self.buffer[: head.length]
            return whole
        if self.lost:
            return False
        if how.status:
            whole = len(self.buffer) >= head.length
            if how.status == 302:
                self._answer(_redirect(how.headers, close=not whole))
            else:
                grpc = proxy._GRPC.get(how.status, 13)
                self._answer(error_response(how.status, how.message, grpc, close=not whole))
            del self.buffer[: head.length]
            return whole
        self.added = how.headers
        self.state["proxy_activity"].touch(target.task_id, ctx_of(self.state).clock())
        whole = len(self.buffer) >= head.length
        request = self._request_head(head, target, method)
        conn = await self._exchange(target, method, request, head.length, whole, failed)
        if conn is None:
            return whole and not self.lost
        self.conn = conn
        try:
            while not conn.done:
                if conn.closed or conn.error is not None or self.lost:
                    # Cut short: the client's connection closes, so a truncated body is not
                    # passed off as complete.
                    return False
                await conn.wait()
            return not self.lost
        finally:
            self._release(conn)

    def _plan(self, head: Head, method: bytes, target: proxy.Target) -> proxy.Plan:
        seen = proxy.evidence(head.headers)
        url = head.url.decode("latin-1")
        return proxy.plan(self.state, seen, method.decode(), False, self.scheme, url, target)

    def _request_head(self, head: Head, target: proxy.Target, method: bytes) -> bytes:
        parts = [method, b" ", head.url, b" HTTP/1.1\r\n"]
        for name, value in head.headers:
            if name == b"cookie":  # the master's cookies are the visitor's: never sent on
                kept = proxy_origin.strip_cookies(value)
                if kept is not None:
                    parts += (name, b": ", kept, b"\r\n")
            elif name not in _DROP:
                parts += (name, b": ", value, b"\r\n")
        if target.secret:
            parts += (proxy.SECRET_HEADER, b": ", target.secret.encode(), b"\r\n")
        if self.client_host:
            parts += (b"x-forwarded-for: ", self.client_host.encode(), b"\r\n")
        parts += (b"host: ", target.address.encode(), b"\r\n")
        if head.length or method not in _BODYLESS:
            parts.append(b"content-length: %d\r\n" % head.length)
        parts.append(b"\r\n")
        return b"".join(parts)

    async def _exchange(
        self,
        t: proxy.Target,
        method: bytes,
        head: bytes,
        length: int,
        whole: bool,
        failed: upstream.Connection | None,
    ) -> upstream.Connection | None:
        """`proxy._exchange` for the lean path: the connection once the response's head has
        gone to the client (None: an error answer went instead)."""
        pool: upstream.Pool = self.state["proxy_pool"]
        body = b""
        if whole:
            body = bytes(self.buffer[:length])
            del self.buffer[:length]
        attempts = (1, 2)
        if failed is not None:
            if not (self._repeatable(failed, method, whole)):
                why = failed.error or await proxy._task_gone(self.state, t.task_id)
                message = why or "the task's service closed the connection unanswered"
                self._answer(error_response(502, message, close=not whole))
                return None
            attempts = (2,)
        for attempt in attempts:
            try:
                conn = await pool.connect(t.dial, method == b"HEAD", fresh=attempt == 2, relay=self)
            except upstream.UpstreamTimeout as exc:
                self._answer(
                    error_response(
                        504, f"the task's service did not answer in time: {exc}", close=not whole
                    )
                )
                return None
            except upstream.UpstreamError as exc:
                why = await proxy._task_gone(self.state, t.task_id)
                message = why or f"the task's service did not answer: {exc}"
                self._answer(error_response(502, message, close=not whole))
                return None
            self.conn = conn
            try:
                await conn.write(head + body)
                if not whole:
                    await self._stream_body(conn, length)
                while not (conn.head_done or conn.closed or conn.error is not None):
                    if self.lost:
                        conn.abort()
                        return None
                    await conn.wait()
            except upstream.UpstreamError:
                pass
            if conn.head_done:
                return conn
            conn.abort()
            self.conn = None
            if self.lost:
                return None
            if attempt == 1 and self._repeatable(conn, method, whole):
                continue
            why = conn.error or await proxy._task_gone(self.state, t.task_id)
            message = why or "the task's service closed the connection unanswered"
            self._answer(error_response(502, message, close=not whole))
            return None
        return None

    @staticmethod
    def _repeatable(conn: upstream.Connection, method: bytes, whole: bool) -> bool:
        """Whether a request a kept-alive connection closed on unanswered may go again."""
        return (
            whole and conn.reused and not conn.answered and method.decode() in upstream.IDEMPOTENT
        )

    async def _stream_body(self, conn: upstream.Connection, left: int) -> None:
        """A body longer than what has arrived: passed on as the client sends it."""
        while left:
            if self.buffer:
                data = bytes(self.buffer[:left])
                del self.buffer[: len(data)]
                left -= len(data)
                if self.paused and self.transport is not None:
                    self.paused = False
                    self.transport.resume_reading()
                await conn.write(data)
                continue
            if self.lost:
                raise upstream.UpstreamError("the client left")
            self._more = self.loop.create_future()
            try:
                await self._more
            finally:
                self._more = None

    def _wake(self) -> None:
        more = self._more
        if more is not None and not more.done():
            more.set_result(None)


def front_protocol(app: Litestar) -> Callable[..., asyncio.Protocol]:
    """uvicorn's `http=` for the master: its protocol class, bound to the app."""

    def make(**kwargs: Any) -> asyncio.Protocol:
        return Front(app, **kwargs)

    return make


def http_protocol(app: Litestar, front: bool) -> Callable[..., asyncio.Protocol] | str:
    """uvicorn's `http=` as the master's config asks (`http.proxy_front`): the master's own
    entry point and the tests' live masters both take it from here, so the tests serve what a
    deployment serves."""
    return front_protocol(app) if front else "httptools"
