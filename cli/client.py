"""HTTP client for the master's `/api/v1` JSON API (grpc-gateway style wire format).

Everything is plain JSON: int64 values arrive as strings, enums as full proto names. Errors are
turned into `cli.errors` exceptions whose message is fit to print as one line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from cli import __version__
from cli.errors import (
    UNAUTHENTICATED_HINT,
    ApiError,
    CliError,
    Forbidden,
    MasterUnreachable,
    NotFound,
    StreamError,
    Unauthenticated,
)
from cli.tls import MasterTrust

DEFAULT_MASTER = "localhost:8080"
DEFAULT_PORT = 8080
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRY_STATUSES = frozenset({502, 503, 504})
UPLOAD_CHUNK = 1024 * 1024

Params = Mapping[str, Any]


def canonicalize_master_url(raw: str) -> str:
    """Return `scheme://host:port[/path]`; http and port 8080 are the defaults.

    Raises CliError for anything that is not a plain master address (query, fragment,
    credentials, unknown scheme, bad port).
    """
    text = raw.strip()
    if not text:
        raise CliError("the master address is empty")
    if "://" not in text:
        text = "http://" + text
    if "?" in text or "#" in text:
        raise CliError(f"invalid master address {raw!r}: a query or fragment is not allowed")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise CliError(f"invalid master address {raw!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise CliError(f"invalid master address {raw!r}: scheme must be http or https")
    if "@" in parts.netloc:
        raise CliError(f"invalid master address {raw!r}: user credentials are not allowed")
    host = parts.hostname
    if not host:
        raise CliError(f"invalid master address {raw!r}: no host name")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    path = parts.path.rstrip("/")
    return f"{scheme}://{host}:{port or DEFAULT_PORT}{path}"


def path_quote(value: object) -> str:
    """Quote one path segment (template names, uuids) like the real bindings do."""
    return quote(str(value), safe="")


def message_from_body(body: Any) -> str:
    """Pick the human message out of an error body ({code, message, error:{error}} and kin)."""
    if not isinstance(body, dict):
        return ""
    for key in ("message", "detail"):
        if isinstance(body.get(key), str) and body[key]:
            return body[key]
    err = body.get("error")
    if isinstance(err, dict):
        for key in ("error", "message"):
            if isinstance(err.get(key), str) and err[key]:
                return err[key]
    if isinstance(err, str) and err:
        return err
    return ""


def one_line(message: str) -> str:
    """Fold a multi-line master message ("invalid config:\n a\n b") into one line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    head, rest = lines[0], "; ".join(lines[1:])
    return f"{head} {rest}" if head.endswith(":") else f"{head}; {rest}"


def error_from_response(resp: httpx.Response, method: str, path: str) -> ApiError:
    """Map an error response to the matching exception."""
    try:
        message = one_line(message_from_body(resp.json()))
    except ValueError:
        message = ""
    if not message:
        text = resp.text.strip().splitlines()
        message = text[0][:300] if text else ""
    status = resp.status_code
    kwargs = {"method": method, "path": path, "detail": message}
    if status == 401:
        return Unauthenticated(status, UNAUTHENTICATED_HINT, **kwargs)
    if status == 403:
        return Forbidden(status, message or "forbidden", **kwargs)
    if status == 404:
        return NotFound(status, message or f"not found: {method} {path}", **kwargs)
    detail = message or resp.reason_phrase or "error"
    return ApiError(status, f"{detail} (HTTP {status} from {method} {path})", **kwargs)


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class ApiClient:
    """Synchronous client for one master; holds the bearer token once logged in."""

    def __init__(
        self,
        master_url: str,
        token: str | None = None,
        *,
        retries: int = 5,
        connect_retries: int = 2,
        backoff: float = 0.5,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        trust: MasterTrust | None = None,
    ) -> None:
        self.master_url = master_url
        self.token = token
        self.retries = retries
        self.connect_retries = connect_retries
        self.backoff = backoff
        self._sleep = sleep
        trust = trust or MasterTrust()
        # httpx checks the certificate against the SNI name when one is given, which is how a
        # master reached by IP still proves the name in its certificate (DET_MASTER_CERT_NAME).
        self._extensions = {"sni_hostname": trust.server_name} if trust.server_name else None
        self._http = httpx.Client(
            base_url=master_url,
            transport=transport,
            verify=trust.httpx_verify(),
            timeout=httpx.Timeout(timeout, connect=10.0),
            headers={"User-Agent": f"det-resolute/{__version__}"},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _delay(self, attempt: int) -> float:
        return self.backoff * (2**attempt)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        json_body: Any = None,
        retry: bool | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> httpx.Response:
        """Send one request; retry 502/503/504 and dropped connections when it is safe.

        `retry=None` retries idempotent methods only; connection *refusals* are retried for
        every method because the request never reached the master. An empty JSON body is
        sent as no body, as the real client does; `bytes` are sent as encoded JSON.
        """
        method = method.upper()
        retryable = method in IDEMPOTENT_METHODS if retry is None else retry
        if isinstance(json_body, bytes):  # already encoded (large uploads)
            body: bytes | None = json_body
        else:
            body = json.dumps(json_body).encode() if json_body not in (None, {}) else None
        headers = self._headers({"Content-Type": "application/json"} if body else None)
        if body is not None:
            headers["Content-Length"] = str(len(body))
        max_retries = self.retries if retryable else 0
        attempt = 0
        while True:
            content = _chunks(body, progress) if body is not None else None
            try:
                resp = self._http.request(
                    method,
                    path,
                    params=params,
                    content=content,
                    headers=headers,
                    extensions=self._extensions,
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt < min(self.connect_retries, self.retries) and retry is not False:
                    self._sleep(self._delay(attempt))
                    attempt += 1
                    continue
                raise MasterUnreachable(self.master_url, _reason(exc)) from None
            except httpx.TransportError as exc:
                if attempt < max_retries:
                    self._sleep(self._delay(attempt))
                    attempt += 1
                    continue
                raise MasterUnreachable(self.master_url, _reason(exc)) from None
            if resp.status_code in RETRY_STATUSES and attempt < max_retries:
                self._sleep(self._delay(attempt))
                attempt += 1
                continue
            if resp.status_code >= 300:
                raise error_from_response(resp, method, path)
            return resp

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send a request and decode the JSON reply (`{}` for an empty body)."""
        resp = self.request(method, path, **kwargs)
        if not resp.content.strip():
            return {}
        try:
            return resp.json()
        except ValueError:
            raise CliError(
                f"the master sent a reply that is not JSON for {method} {path}"
            ) from None

    def get(self, path: str, params: Params | None = None) -> Any:
        return self.call("GET", path, params=params)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        return self.call("POST", path, json_body=body, **kwargs)

    def patch(self, path: str, body: Any = None) -> Any:
        return self.call("PATCH", path, json_body=body, retry=True)

    def delete(self, path: str) -> Any:
        return self.call("DELETE", path)

    def paginate(
        self, path: str, key: str, params: Params | None = None, *, page_size: int = 200
    ) -> list[Any]:
        """Read every page of a list endpoint, following `pagination.endIndex`/`total`."""
        query = dict(params or {})
        offset = int(query.pop("offset", 0))
        query.pop("limit", None)
        items: list[Any] = []
        while True:
            page = self.get(path, {**query, "offset": offset, "limit": page_size})
            batch = page.get(key) or []
            items.extend(batch)
            pagination = page.get("pagination") or {}
            end, total = _as_int(pagination.get("endIndex")), _as_int(pagination.get("total"))
            if not batch or end is None or total is None or end >= total or end <= offset:
                return items
            offset = end

    def stream(self, path: str, params: Params | None = None) -> Iterator[dict[str, Any]]:
        """Yield the `result` object of each NDJSON line; an `error` line raises StreamError."""
        timeout = httpx.Timeout(connect=10.0, read=None, write=60.0, pool=10.0)
        try:
            with self._http.stream(
                "GET",
                path,
                params=params,
                headers=self._headers(),
                timeout=timeout,
                extensions=self._extensions,
            ) as resp:
                if resp.status_code >= 300:
                    resp.read()
                    raise error_from_response(resp, "GET", path)
                for line in resp.iter_lines():
                    if line.strip():
                        yield _decode_stream_line(line, path)
        except httpx.TransportError as exc:
            raise MasterUnreachable(self.master_url, _reason(exc)) from None


def _decode_stream_line(line: str, path: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except ValueError:
        raise CliError(f"the master sent a malformed stream line on {path}: {line[:200]}") from None
    if not isinstance(obj, dict):
        raise CliError(f"the master sent a malformed stream line on {path}: {line[:200]}")
    if obj.get("error"):
        message = one_line(message_from_body(obj)) or json.dumps(obj["error"])
        raise StreamError(500, f"stream error from the master: {message}", method="GET", path=path)
    result = obj.get("result", obj)
    return result if isinstance(result, dict) else {"value": result}


def _chunks(body: bytes, progress: Callable[[int], None] | None) -> Iterator[bytes]:
    for start in range(0, len(body), UPLOAD_CHUNK):
        chunk = body[start : start + UPLOAD_CHUNK]
        yield chunk
        if progress is not None:
            progress(len(chunk))


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
