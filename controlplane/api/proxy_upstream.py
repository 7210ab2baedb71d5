"""The proxy's HTTP/1.1 connections to tasks' services: keep-alive, on plain asyncio.

httpcore, which this replaces, was three quarters of the proxy's CPU per request (anyio streams,
h11's pure-Python parser, its pool's locks), and on a small machine the proxy shares the CPU
with the service it fronts, so its cost is the service's lost throughput. This is the least a
reverse proxy needs: one `asyncio.Protocol` per connection, httptools (the C parser uvicorn
uses) for responses, idle connections kept per address. Responses stream: reading from the
service pauses while more than `HIGH_WATER` bytes wait for the client.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Protocol

import httptools

HIGH_WATER = 256 * 1024
CONNECT_TIMEOUT_S = 10.0
MAX_IDLE_PER_ADDRESS = 64
# Methods that may be sent again when a kept-alive connection turns out to have been closed
# by the service before it answered anything (RFC 9110 §9.2.2).
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})


MAX_HEAD = 64 * 1024


class Relay(Protocol):
    """Where a connection in relay mode passes a response on, as the service's own bytes."""

    def relay_head(self, conn: Connection, head: bytes) -> bytes:
        """The head to pass on (it goes out with the body's first bytes, in one write)."""

    def relay_body(self, data: bytes) -> None: ...


class UpstreamError(Exception):
    """The service could not be reached, or broke the connection before answering."""


class UpstreamTimeout(UpstreamError):
    pass


class Connection(asyncio.Protocol):
    """One connection to a service; one request at a time. The parser's callbacks fill the
    response; the proxy's task waits on `wait()` between pieces."""

    def __init__(self, pool: Pool, address: str) -> None:
        self.pool = pool
        self.address = address
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.reused = False
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self.begin(head_only=False)

    def begin(self, head_only: bool, relay: Relay | None = None) -> None:
        """Reset for the next request (HEAD: the response has no body, whatever it says).
        With a `relay`, the response is not kept: its head and its body's bytes, framing and
        all, go to the relay as they arrive, and the parser only tells where it ends."""
        self.head_only = head_only
        self.relay = relay
        # Told once, last, when the response has ended (or cannot): instead of a waiting task.
        self.on_end: Callable[[Connection], None] | None = None
        self.pending = b""  # relay mode: a response head not yet complete
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.head_done = False
        self.done = False
        self.answered = False  # any byte of a response arrived
        self.error: str | None = None
        self.framed = False  # content-length or chunked (else the body ends at EOF)
        self.keep_alive = False

    # --- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.answered = True
        try:
            if self.relay is not None:
                self._relay(data)
            else:
                self.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            # An upgrade is never asked for here (the proxy drops Upgrade): as bad as garbage.
            self.error = f"the task's service sent a malformed response: {exc}"
            self.abort()
        self._wake()
        if self.on_end is not None and (self.done or self.error is not None or self.closed):
            self._end()

    def _relay(self, data: bytes) -> None:
        relay = self.relay
        assert relay is not None
        out = b""
        while not self.head_done:
            # The head is found here, not by the parser, which does not say where it ended.
            data = self.pending + data if self.pending else data
            end = data.find(b"\r\n\r\n")
            if end < 0:
                if len(data) > MAX_HEAD:
                    raise httptools.HttpParserError("a response head over 64 KiB")
                self.pending = data
                return
            head, data, self.pending = data[: end + 4], data[end + 4 :], b""
            self.parser.feed_data(head)
            if self.head_done:
                out = relay.relay_head(self, head)
            # else an interim answer (100 Continue), dropped: the real one follows
        if data:
            self.parser.feed_data(data)
            if self.error is not None:  # bytes past the response's end are not passed on
                data = b""
        if out or data:
            relay.relay_body(out + data if out else data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.head_done and not self.done and not self.framed and self.error is None:
            self.done = True  # a body without length ends when the service closes
        self._wake()
        self._resume()
        if self.on_end is not None:
            self._end()

    def _end(self) -> None:
        end, self.on_end = self.on_end, None
        assert end is not None
        end(self)

    def pause_writing(self) -> None:
        self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        self._resume()

    # --- httptools callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.done:  # a second answer to one request: the service cannot be trusted now
            self.error = "the task's service answered more than it was asked"
            self.abort()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        lowered = name.lower()
        if lowered == b"content-length" or (
            lowered == b"transfer-encoding" and b"chunked" in value.lower()
        ):
            self.framed = True

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
            self.headers, self.framed = [], False
            return
        self.status = status
        self.head_done = True
        # Asked here: once the message completes, the parser has reset and answers False.
        self.keep_alive = self.parser.should_keep_alive()
        if self.head_only:
            self.done = True

    def on_body(self, body: bytes) -> None:
        if self.relay is not None:
            return
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > HIGH_WATER and self.transport is not None:
            self.transport.pause_reading()

    def on_message_complete(self) -> None:
        if self.head_done:
            self.done = True

    # --- the proxy's side --------------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _resume(self) -> None:
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    async def wait(self) -> None:
        """Until the parser or the connection has something new."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def write(self, data: bytes) -> None:
        if self.closed or self.transport is None:
            raise UpstreamError("the task's service closed the connection")
        self.transport.write(data)
        if self._drained is not None:
            await self._drained
            self._drained = None

    def take(self) -> bytes:
        """The body bytes received so far (and read on, if reading was paused)."""
        data = b"".join(self.chunks) if len(self.chunks) != 1 else self.chunks[0]
        self.chunks.clear()
        if self.buffered > HIGH_WATER and self.transport is not None and not self.closed:
            self.transport.resume_reading()
        self.buffered = 0
        return data

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def reusable(self) -> bool:
        return (
            self.done
            and not self.closed
            and self.error is None
            and not self.head_only  # a HEAD answer may declare a body it never sends
            and self.keep_alive
        )


class Pool:
    """Idle keep-alive connections, per service address (`host:port`)."""

    def __init__(self) -> None:
        self._idle: dict[str, list[Connection]] = {}

    async def connect(
        self, address: str, head_only: bool, fresh: bool = False, relay: Relay | None = None
    ) -> Connection:
        """An idle connection to `address` (unless `fresh`), or a new one."""
        conn = None if fresh else self.idle(address, head_only, relay)
        if conn is not None:
            return conn
        host, _, port = address.rpartition(":")
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    lambda: Connection(self, address), host.strip("[]"), int(port)
                ),
                CONNECT_TIMEOUT_S,
            )
        except TimeoutError as exc:
            raise UpstreamTimeout(f"no connection within {CONNECT_TIMEOUT_S:g}s") from exc
        except OSError as exc:
            raise UpstreamError(str(exc) or type(exc).__name__) from exc
        conn.begin(head_only, relay)
        return conn

    def idle(self, address: str, head_only: bool, relay: Relay | None) -> Connection | None:
        """An idle connection to `address`, made ready for a request, if there is one."""
        idle = self._idle.get(address)
        while idle:
            conn = idle.pop()
            if not conn.closed:
                conn.reused = True
                conn.begin(head_only, relay)
                return conn
        return None

    def release(self, conn: Connection) -> None:
        """Keep a connection whose exchange completed cleanly; close any other."""
        if not conn.reusable():
            conn.abort()
            return
        idle = self._idle.setdefault(conn.address, [])
        if len(idle) >= MAX_IDLE_PER_ADDRESS:
            conn.abort()
            return
        idle.append(conn)

    def forget(self, conn: Connection) -> None:
        idle = self._idle.get(conn.address)
        if idle is not None:
            with contextlib.suppress(ValueError):
                idle.remove(conn)
            if not idle:
                del self._idle[conn.address]

    def close(self) -> None:
        for idle in list(self._idle.values()):
            for conn in list(idle):
                conn.abort()
        self._idle.clear()
