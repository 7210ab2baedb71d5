"""close() ends the preemption watcher's long poll at once, against a master that holds it.

A poll left in flight would hold a request open on the master for up to a minute after the task's
context closed (and a master's graceful shutdown waits for it). The master here is a real HTTP
server on loopback that holds every long poll until the client hangs up, and says when it did.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness._session import Session, SessionAborted
from harness.core import DummyDistributedContext, PreemptContext

ALLOC = "7.1.1"


class HoldingMaster(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.polls: list[int] = []
        self.holding = threading.Event()
        self.hung_up = threading.Event()
        self.hung_up_at = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: HoldingMaster
    protocol_version = "HTTP/1.1"  # keep-alive, as the harness's session uses it

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        timeout_s = int(query["timeout_seconds"][0])
        self.server.polls.append(timeout_s)
        if timeout_s > 0:
            self._hold(timeout_s)
            return
        self._answer({"preempt": False})

    def _hold(self, timeout_s: int) -> None:
        """Like the master: keep the request until the timeout, unless the client hangs up."""
        self.server.holding.set()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.02)
            if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                self.server.hung_up_at = time.monotonic()
                self.server.hung_up.set()
                self.close_connection = True
                return
        self._answer({"preempt": False})

    def _answer(self, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def master() -> Iterator[HoldingMaster]:
    server = HoldingMaster()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_close_ends_a_long_poll_in_flight_within_a_second(master: HoldingMaster) -> None:
    session = Session(master.url, "alloc-token")
    ctx = PreemptContext(session, ALLOC, DummyDistributedContext()).start()
    assert ctx.should_preempt() is False
    assert master.holding.wait(5), "the watcher never started its long poll"
    watcher = ctx._watcher
    assert watcher is not None

    started = time.monotonic()
    ctx.close()
    closed_in = time.monotonic() - started
    assert closed_in < 1.0, closed_in
    assert not watcher.is_alive()
    assert master.hung_up.wait(1), "the master never saw the poll end"
    assert master.hung_up_at - started < 1.0
    # Still one quick answer and one long poll: ending it cost no extra requests.
    assert master.polls == [0, 60]

    # The task's own session is untouched (its metrics and checkpoints go on after close()).
    path = f"/api/v1/allocations/{ALLOC}/signals/preemption"
    assert session.request("GET", path, params={"timeout_seconds": 0}) == {"preempt": False}


def test_an_aborted_session_refuses_new_requests_at_once(master: HoldingMaster) -> None:
    session = Session(master.url, "t").clone()
    session.abort()
    started = time.monotonic()
    with pytest.raises(SessionAborted):
        session.request("GET", "/api/v1/x/signals/preemption", params={"timeout_seconds": 0})
    assert time.monotonic() - started < 0.5
    assert master.polls == []
