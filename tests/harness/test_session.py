"""The harness's HTTP transport against a real loopback server: headers, errors, outages."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harness._session import (
    ALLOCATION_TOKEN_HEADER,
    APIError,
    MasterUnreachable,
    RetryPolicy,
    Session,
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    answers: list[tuple[int, Any]]
    seen: list[dict[str, Any]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *_: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append(
            {
                "method": self.command,
                "path": self.path,
                "token": self.headers.get(ALLOCATION_TOKEN_HEADER),
                "body": json.loads(body) if body else None,
            }
        )
        status, payload = self.server.answers.pop(0) if self.server.answers else (200, {})
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = _answer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(port: int = 0, answers: list[tuple[int, Any]] | None = None) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", port), _Handler)
    server.answers = list(answers or [])
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_json_request_with_the_allocation_token() -> None:
    with serve(answers=[(200, {"ok": True})]) as server:
        session = Session(f"http://127.0.0.1:{server.server_port}/", "tok")
        answer = session.request(
            "POST", "/api/v1/x", body={"a": 1}, params={"timeout_seconds": 0, "flag": True}
        )
    assert answer == {"ok": True}
    (seen,) = server.seen
    assert seen == {
        "method": "POST",
        "path": "/api/v1/x?timeout_seconds=0&flag=true",
        "token": "Bearer tok",
        "body": {"a": 1},
    }


def test_error_answers_raise_with_the_master_message() -> None:
    with serve(answers=[(404, {"message": "trial 9 not found"})]) as server:
        session = Session(f"http://127.0.0.1:{server.server_port}", "tok")
        with pytest.raises(APIError) as info:
            session.request("GET", "/api/v1/trials/9")
    assert info.value.status == 404 and info.value.message == "trial 9 not found"
    assert len(server.seen) == 1  # not retried


def test_gateway_errors_are_retried() -> None:
    with serve(answers=[(503, {}), (502, {}), (200, {"done": 1})]) as server:
        session = Session(
            f"http://127.0.0.1:{server.server_port}",
            "tok",
            retry=RetryPolicy(outage_s=10, first_backoff_s=0.01),
        )
        assert session.request("GET", "/x") == {"done": 1}
    assert len(server.seen) == 3


def test_unreachable_master_gives_up_after_the_policy() -> None:
    port = _free_port()
    sleeps: list[float] = []
    clock = iter(range(0, 1000)).__next__
    session = Session(
        f"http://127.0.0.1:{port}",
        "tok",
        retry=RetryPolicy(outage_s=5, first_backoff_s=1, max_backoff_s=2),
        sleep=sleeps.append,
        clock=lambda: float(clock()),
    )
    with pytest.raises(MasterUnreachable):
        session.request("GET", "/x")
    assert sleeps and all(s <= 2 for s in sleeps)


def test_a_report_survives_a_master_restart() -> None:
    """Nothing listens at first; the 'master' comes back 1.5 s later and takes the report."""
    port = _free_port()
    results: list[Any] = []
    session = Session(
        f"http://127.0.0.1:{port}",
        "tok",
        retry=RetryPolicy(outage_s=30, first_backoff_s=0.1, max_backoff_s=0.5),
    )
    thread = threading.Thread(
        target=lambda: results.append(session.request("POST", "/api/v1/m", body={"v": 1}))
    )
    began = time.monotonic()
    thread.start()
    time.sleep(1.5)
    with serve(port, answers=[(200, {"stored": True})]) as server:
        thread.join(10)
    assert results == [{"stored": True}]
    assert time.monotonic() - began >= 1.5
    assert [s["body"] for s in server.seen] == [{"v": 1}]
