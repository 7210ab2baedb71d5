"""Talking to the master from inside a task: JSON over HTTP with the allocation token.

Standard library only (urllib). The master may restart while a task runs (an upgrade, a crash,
a cloud VM replaced): connection errors and gateway answers are retried with backoff for up to
``RetryPolicy.outage_s``, so a metrics or checkpoint report survives an outage of a minute or two.
Answers the master gave on purpose (4xx, 500) are not retried: they raise ``APIError``.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

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


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying while the master cannot be reached."""

    outage_s: float = 180.0
    first_backoff_s: float = 0.5
    max_backoff_s: float = 10.0

    def backoff(self, attempt: int) -> float:
        return min(self.max_backoff_s, self.first_backoff_s * (2**attempt))


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


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in RETRYABLE_STATUSES
    if isinstance(exc, urllib.error.URLError):
        return True
    return isinstance(exc, (ConnectionError, http.client.HTTPException, socket.timeout, OSError))


class Session:
    """The HTTP transport: ``master_url`` plus the allocation token (or a user token)."""

    def __init__(
        self,
        master_url: str,
        token: str | None,
        *,
        retry: RetryPolicy = RetryPolicy(),
        user_token: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.master_url = master_url.rstrip("/")
        self.token = token
        self.retry = retry
        self._user_token = user_token
        self._sleep = sleep
        self._clock = clock

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

    def _once(self, method: str, path: str, data: bytes | None, params: Any, timeout: float) -> Any:
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
            try:
                message = json.loads(text).get("message", text)
            except (ValueError, AttributeError):
                message = text
            raise APIError(method, path, exc.code, str(message)[:2000]) from None
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
                pause = policy.backoff(attempt)
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
