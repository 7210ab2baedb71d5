"""A fake instance-metadata server for one VM, serving both clouds' paths on 127.0.0.1.

AWS (IMDSv2 only, as our instances are launched with tokens required):
- `PUT /latest/api/token` with `X-aws-ec2-metadata-token-ttl-seconds: 1..21600` → a token
  (400 without a valid TTL header);
- `GET /latest/meta-data/...` needs `X-aws-ec2-metadata-token` with a live token, else 401:
  `instance-id`, `local-ipv4`, `spot/instance-action` (404 until `notice()`).
GCE (every request needs `Metadata-Flavor: Google`, else 403):
- `GET /computeMetadata/v1/instance/name`, `.../instance/id`, `.../instance/preempted`
  (FALSE until `notice()`).

Backdoors for tests: `notice()`, `clear_notice()`, `expire_tokens()`, and `requests`, the
(method, path) of every request served. Time is the injectable `clock` (monotonic seconds).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

AWS_META = "/latest/meta-data/"
GCE_INSTANCE = "/computeMetadata/v1/instance/"
MAX_TTL_S = 21600


class FakeMetadata:
    """One VM's metadata server; `start()` binds 127.0.0.1 on a free port, `url` is its base."""

    def __init__(
        self,
        instance_id: str = "i-0123456789abcdef0",
        instance_name: str | None = None,
        *,
        numeric_id: str = "1234567890123456789",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.instance_id = instance_id
        self.instance_name = instance_name or instance_id
        self.numeric_id = numeric_id
        self.clock = clock
        self.requests: list[tuple[str, str]] = []
        self._tokens: dict[str, float] = {}
        self._action: dict[str, str] | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- backdoors -----------------------------------------------------------------------------

    def notice(self, action: str = "terminate", at: datetime | None = None) -> None:
        """Raise the interruption notice on both clouds' paths (AWS: two minutes ahead)."""
        when = at or datetime.now(UTC) + timedelta(minutes=2)
        stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._lock:
            self._action = {"action": action, "time": stamp}

    def clear_notice(self) -> None:
        with self._lock:
            self._action = None

    def expire_tokens(self) -> None:
        """Every token issued so far is refused from now on (as after its TTL)."""
        with self._lock:
            self._tokens.clear()

    @property
    def noticed(self) -> bool:
        return self._action is not None

    # --- server --------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "start() first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeMetadata:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake._serve(self, "GET")

            def do_PUT(self) -> None:
                fake._serve(self, "PUT")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(0.05,),
            name=f"metadata-{self.instance_id}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeMetadata:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- request handling ----------------------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = urlsplit(handler.path).path
        with self._lock:
            self.requests.append((method, path))
            status, body = self._answer(method, path, handler.headers)
        data = body.encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _answer(self, method: str, path: str, headers: Any) -> tuple[int, str]:
        if path == "/latest/api/token":
            return self._token(method, headers)
        if path.startswith(AWS_META):
            if method != "GET":
                return 405, "method not allowed"
            expires = self._tokens.get(headers.get("X-aws-ec2-metadata-token", ""))
            if expires is None or self.clock() >= expires:
                return 401, "unauthorized"
            return self._aws(path.removeprefix(AWS_META))
        if path.startswith(GCE_INSTANCE):
            if headers.get("Metadata-Flavor") != "Google":
                return 403, "missing Metadata-Flavor: Google"
            return self._gce(path.removeprefix(GCE_INSTANCE))
        return 404, "not found"

    def _token(self, method: str, headers: Any) -> tuple[int, str]:
        if method != "PUT":
            return 405, "method not allowed"
        try:
            ttl = int(headers.get("X-aws-ec2-metadata-token-ttl-seconds", ""))
        except ValueError:
            return 400, "missing or invalid X-aws-ec2-metadata-token-ttl-seconds"
        if not 1 <= ttl <= MAX_TTL_S:
            return 400, "invalid X-aws-ec2-metadata-token-ttl-seconds"
        token = secrets.token_urlsafe(24)
        self._tokens[token] = self.clock() + ttl
        return 200, token

    def _aws(self, item: str) -> tuple[int, str]:
        if item == "instance-id":
            return 200, self.instance_id
        if item == "local-ipv4":
            return 200, "127.0.0.1"
        if item == "spot/instance-action":
            return (200, json.dumps(self._action)) if self._action else (404, "not found")
        return 404, "not found"

    def _gce(self, item: str) -> tuple[int, str]:
        if item == "name":
            return 200, self.instance_name
        if item == "id":
            return 200, self.numeric_id
        if item == "preempted":
            return 200, "TRUE" if self._action else "FALSE"
        return 404, "not found"
