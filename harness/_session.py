"""Talking to the master from inside a task: JSON over HTTP with the allocation token.

Standard library only (http.client). The master may restart while a task runs (an upgrade, a
crash, a cloud VM replaced) or lose its database for a while (it answers 503 with Retry-After):
connection errors (refused, reset, timed out) and 502/503/504 are retried with exponential
backoff and jitter for up to ``RetryPolicy.outage_s`` (10 minutes; ``RESOLUTE_MASTER_OUTAGE_S``),
so a metrics or checkpoint report survives the outage and the trial goes on. Answers the master
gave on purpose (4xx, 500) are not retried: they raise ``APIError``.

Connections are kept alive: each thread of a ``Session`` reuses one HTTP/1.1 connection (a new
one per request cost ~0.4 ms of CPU, most of a metrics report). A kept connection the master
closed (its idle timeout, a restart) is noticed before use, or when a request on it fails before
any answer, and replaced at once by a new one; only a failure on a new connection counts against
the retry policy. ``ssl`` is imported only for an https master. A master reached through an HTTP
proxy (``http_proxy``/``https_proxy`` without ``no_proxy``) or a URL that is not plain http(s)
goes through urllib as before, one connection per request.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import select
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from weakref import WeakSet

ALLOCATION_TOKEN_HEADER = "Grpc-Metadata-x-allocation-token"
RETRYABLE_STATUSES = frozenset({502, 503, 504})


class APIError(Exception):
    """The master answered with an error status; ``status`` is the HTTP code."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {message}")
        self.status = status
        self.message = message


class MasterUnreachable(Exception):
    """The master did not answer (connection refused, reset, timed out) within the policy."""


class SessionAborted(MasterUnreachable):
    """The session was aborted (``Session.abort``): its requests fail at once, in flight or not."""


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying while the master cannot be reached (or answers 502/503/504)."""

    outage_s: float = 600.0
    first_backoff_s: float = 0.5
    max_backoff_s: float = 10.0

    def backoff(self, attempt: int, jitter: float = 0.0, retry_after: float | None = None) -> float:
        """The pause before try ``attempt + 1``: doubling from ``first_backoff_s`` up to
        ``max_backoff_s``, stretched by up to half by ``jitter`` (a number in [0, 1): tasks that
        met the same outage do not all come back at once), and at least the master's
        Retry-After when it sent one (within ``max_backoff_s``)."""
        pause = min(self.max_backoff_s, self.first_backoff_s * (2 ** min(attempt, 30)))
        if retry_after is not None:
            pause = max(pause, min(retry_after, self.max_backoff_s))
        return pause * (1 + jitter / 2)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> RetryPolicy:
        """The default policy, its outage budget from ``RESOLUTE_MASTER_OUTAGE_S`` when set (a
        site whose master restarts slowly, or a test that wants a dead address to fail fast).
        A value that is not a number >= 0 is refused by name, not ignored."""
        raw = environ.get(OUTAGE_ENV)
        if raw is None:
            return cls()
        try:
            outage = float(raw)
        except ValueError:
            outage = -1.0
        if not outage >= 0 or outage == float("inf"):
            raise ValueError(f"{OUTAGE_ENV} must be a number of seconds >= 0, not {raw!r}")
        return cls(outage_s=outage)


OUTAGE_ENV = "RESOLUTE_MASTER_OUTAGE_S"
NO_RETRY = RetryPolicy(outage_s=0.0)


class Transport(Protocol):
    """One request to the master; every harness component talks through this.

    ``request`` blocks until an answer, returns the decoded JSON body (None when empty), raises
    ``APIError`` for an error status and ``MasterUnreachable`` when the master cannot be reached
    within ``retry`` (the transport's own policy when None). ``timeout`` bounds one attempt, in
    seconds.
    """

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> Any: ...


class _GatewayAnswer(Exception):
    """502/503/504 from the master or a proxy in front of it: retried like a connection error."""

    def __init__(self, status: int, retry_after: str | None = None, message: str = "") -> None:
        super().__init__(f"HTTP {status}" + (f": {message}" if message else ""))
        self.code = status
        self.retry_after = _seconds(retry_after)


def _seconds(value: str | None) -> float | None:
    """A Retry-After in seconds (the HTTP-date form is not used by the master: ignored)."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds < float("inf") else None


def _retry_after(exc: BaseException) -> float | None:
    if isinstance(exc, _GatewayAnswer):
        return exc.retry_after
    if isinstance(exc, urllib.error.HTTPError) and exc.headers is not None:
        return _seconds(exc.headers.get("Retry-After"))
    return None


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, _GatewayAnswer):
        return True
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in RETRYABLE_STATUSES
    if isinstance(exc, urllib.error.URLError):
        return True
    return isinstance(exc, (ConnectionError, http.client.HTTPException, socket.timeout, OSError))


def _error_message(text: str) -> str:
    try:
        message = json.loads(text).get("message", text)
    except (ValueError, AttributeError):
        message = text
    return str(message)[:2000]


def _closed_by_peer(sock: Any) -> bool:
    """An idle kept-alive socket that is readable has been closed by the master (or is broken)."""
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)
    except (OSError, ValueError):
        return True


def _stale(exc: BaseException) -> bool:
    """A request on a reused connection that failed this way never got an answer: the master had
    closed the connection (idle timeout, restart), so it is sent again on a new one at once."""
    return isinstance(exc, (ConnectionError, http.client.BadStatusLine))


class _Endpoint:
    """Where the kept-alive connections go: scheme, host, port, path prefix; None when urllib
    must carry the requests (a proxy applies, or the URL is not plain http/https)."""

    def __init__(self, scheme: str, host: str, port: int | None, prefix: str) -> None:
        self.scheme, self.host, self.port, self.prefix = scheme, host, port, prefix

    @classmethod
    def parse(cls, url: str) -> _Endpoint | None:
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError:
            return None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname or parts.username:
            return None
        proxies = urllib.request.getproxies()
        if proxies.get(scheme) and not urllib.request.proxy_bypass(parts.netloc):
            return None
        return cls(scheme, parts.hostname, port, parts.path.rstrip("/"))

    def connect(self, timeout: float) -> http.client.HTTPConnection:
        if self.scheme == "https":
            import ssl  # only for an https master

            return http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)


class Session:
    """The HTTP transport: ``master_url`` plus the allocation token (or a user token).

    Safe to share between threads: each thread keeps its own connection. ``close`` closes them
    all (a later request opens a new one).
    """

    def __init__(
        self,
        master_url: str,
        token: str | None,
        *,
        retry: RetryPolicy | None = None,
        user_token: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.master_url = master_url.rstrip("/")
        self.token = token
        self.retry = retry if retry is not None else RetryPolicy.from_env(os.environ)
        self._user_token = user_token
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter
        self._endpoint = _Endpoint.parse(self.master_url)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: WeakSet[http.client.HTTPConnection] = WeakSet()
        self._aborted = False

    def clone(self) -> Session:
        """The same master, token and policies, with connections of its own: a long poll can
        run on it and be aborted without disturbing anybody else's requests."""
        return Session(
            self.master_url, self.token, retry=self.retry, user_token=self._user_token,
            sleep=self._sleep, clock=self._clock, jitter=self._jitter,
        )  # fmt: skip

    def close(self) -> None:
        """Close every kept connection (of all threads)."""
        with self._lock:
            conns = list(self._open)
            self._open.clear()
        for conn in conns:
            conn.close()

    def abort(self) -> None:
        """End this session for good: later requests raise `SessionAborted`, and one blocked on
        an answer in another thread wakes up and raises it too.

        Closing a socket does not wake a thread blocked reading it; shutting it down does (the
        read sees the end of the stream), and the master sees the client hang up. Requests that
        urllib carries (through a proxy) cannot be interrupted: they end with their timeout.
        """
        with self._lock:
            self._aborted = True
            conns = list(self._open)
            self._open.clear()
        for conn in conns:
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):  # already closed, or never connected
                    sock.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _check_aborted(self, method: str, path: str) -> None:
        if self._aborted:
            raise SessionAborted(f"{method} {path}: the session was aborted")

    def _connection(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection and whether it is new (no request done on it yet)."""
        assert self._endpoint is not None
        kept = getattr(self._local, "conn", None)
        if kept is not None:
            conn, pid = kept
            if pid == os.getpid() and conn.sock is not None and not _closed_by_peer(conn.sock):
                conn.timeout = timeout
                conn.sock.settimeout(timeout)
                return conn, False
            if pid == os.getpid():
                self._drop(conn)
            self._local.conn = None
        conn = self._endpoint.connect(timeout)
        self._local.conn = (conn, os.getpid())
        with self._lock:
            # Registered before it connects, so that an abort() from now on shuts it down.
            self._open.add(conn)
        return conn, True

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        kept = getattr(self._local, "conn", None)
        if kept is not None and kept[0] is conn:
            self._local.conn = None
        with self._lock:
            self._open.discard(conn)
        conn.close()

    def _exchange(
        self, conn: http.client.HTTPConnection, method: str, target: str, data: bytes | None
    ) -> tuple[int, bytes, str | None]:
        try:
            conn.request(method, target, body=data, headers=self._headers())
            # Connected and sent: an abort() that comes after this check finds the socket and
            # shuts it down, one that came before it is seen here, so the read below never
            # outlives an abort.
            self._check_aborted(method, target)
            resp = conn.getresponse()
            raw = resp.read()
        except BaseException:
            self._drop(conn)  # its state is unknown
            raise
        if resp.will_close:
            self._drop(conn)
        return resp.status, raw, resp.getheader("Retry-After")

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            if self._user_token:
                headers["Authorization"] = f"Bearer {self.token}"
            else:
                headers[ALLOCATION_TOKEN_HEADER] = f"Bearer {self.token}"
        return headers

    def _url(self, path: str, params: Mapping[str, Any] | None) -> str:
        url = self.master_url + path
        if params:
            pairs = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in params.items()}
            url += "?" + urllib.parse.urlencode(pairs)
        return url

    def _target(self, path: str, params: Mapping[str, Any] | None) -> str:
        assert self._endpoint is not None
        target = self._endpoint.prefix + path
        if params:
            pairs = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in params.items()}
            target += "?" + urllib.parse.urlencode(pairs)
        return target

    def _once(self, method: str, path: str, data: bytes | None, params: Any, timeout: float) -> Any:
        self._check_aborted(method, path)
        if self._endpoint is None:
            return self._once_urllib(method, path, data, params, timeout)
        target = self._target(path, params)
        conn, new = self._connection(timeout)
        try:
            status, raw, retry_after = self._exchange(conn, method, target, data)
        except Exception as exc:
            self._check_aborted(method, path)
            if new or not _stale(exc):
                raise
            conn, _ = self._connection(timeout)  # the master closed the kept one: a new one
            status, raw, retry_after = self._exchange(conn, method, target, data)
        if 200 <= status < 300:
            return json.loads(raw) if raw.strip() else None
        if status in RETRYABLE_STATUSES:
            message = _error_message(raw.decode("utf-8", "replace")) if raw.strip() else ""
            raise _GatewayAnswer(status, retry_after, message[:200])
        raise APIError(method, path, status, _error_message(raw.decode("utf-8", "replace")))

    def _once_urllib(
        self, method: str, path: str, data: bytes | None, params: Any, timeout: float
    ) -> Any:
        req = urllib.request.Request(
            self._url(path, params), data=data, method=method, headers=self._headers()
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code in RETRYABLE_STATUSES:
                raise
            text = exc.read().decode("utf-8", "replace")
            raise APIError(method, path, exc.code, _error_message(text)) from None
        return json.loads(raw) if raw.strip() else None

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> Any:
        policy = retry or self.retry
        data = None if body is None else json.dumps(body).encode()
        deadline = self._clock() + policy.outage_s
        attempt = 0
        while True:
            try:
                return self._once(method, path, data, params, timeout)
            except APIError:
                raise
            except Exception as exc:
                if not _is_connection_error(exc):
                    raise
                pause = policy.backoff(attempt, self._jitter(), _retry_after(exc))
                if self._clock() + pause > deadline:
                    raise MasterUnreachable(f"{method} {path}: {exc}") from exc
                attempt += 1
                self._sleep(pause)

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, body={} if body is None else body, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("PATCH", path, body={} if body is None else body, **kw)
