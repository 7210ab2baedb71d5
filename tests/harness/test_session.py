"""The harness's HTTP transport against a real loopback server: headers, errors, outages."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import harness._session as session_module
from harness._session import (
    ALLOCATION_TOKEN_HEADER,
    NO_RETRY,
    APIError,
    MasterUnreachable,
    RetryPolicy,
    Session,
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    answers: list[tuple[int, Any]]
    seen: list[dict[str, Any]]
    connections: list[socket.socket]  # every accepted connection, in order
    hang_up_after_answer = False  # close the connection after answering, without saying so

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections.append(request)
        super().process_request(request, client_address)

    def hang_up_all(self) -> None:
        """What a master that dies does to its open connections."""
        for conn in self.connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


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
        if isinstance(payload, dict) and "retry_after" in payload:
            self.send_header("Retry-After", str(payload["retry_after"]))
        self.end_headers()
        self.wfile.write(data)
        if self.server.hang_up_after_answer:
            self.close_connection = True

    do_GET = do_POST = do_PATCH = _answer


class _KeepAliveHandler(_Handler):
    protocol_version = "HTTP/1.1"  # as uvicorn answers: connections stay open between requests


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(
    port: int = 0, answers: list[tuple[int, Any]] | None = None, *, keep_alive: bool = False
) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", port), _KeepAliveHandler if keep_alive else _Handler)
    server.answers = list(answers or [])
    server.seen = []
    server.connections = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        server.hang_up_all()


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
        jitter=lambda: 0.0,
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


# --- kept-alive connections ---------------------------------------------------------------------


def _quick(port: int, sleeps: list[float] | None = None) -> Session:
    return Session(
        f"http://127.0.0.1:{port}",
        "tok",
        retry=RetryPolicy(outage_s=30, first_backoff_s=0.05, max_backoff_s=0.2),
        sleep=(lambda s: (sleeps.append(s), time.sleep(s))[0])
        if sleeps is not None
        else time.sleep,
        jitter=lambda: 0.0,
    )


def test_one_connection_carries_all_requests_of_a_thread() -> None:
    with serve(keep_alive=True) as server:
        session = _quick(server.server_port)
        for i in range(20):
            session.request("POST", "/api/v1/trials/1/metrics", body={"i": i})
        session.request("GET", "/api/v1/x", params={"a": 1})
        session.close()
    assert len(server.seen) == 21
    assert len(server.connections) == 1
    assert server.seen[-1]["path"] == "/api/v1/x?a=1"


def test_each_thread_has_its_own_connection_and_close_ends_them_all() -> None:
    with serve(keep_alive=True) as server:
        session = _quick(server.server_port)
        session.request("GET", "/a")
        other = threading.Thread(target=lambda: [session.request("GET", "/b") for _ in range(3)])
        other.start()
        other.join(10)
        session.request("GET", "/a")
        assert len(server.connections) == 2
        session.close()
        session.request("GET", "/a")  # a new connection after close
        session.close()
    assert len(server.seen) == 6
    assert len(server.connections) == 3


def test_error_and_gateway_answers_keep_the_connection_and_the_retry_policy() -> None:
    answers = [(503, {}), (502, {}), (200, {"done": 1}), (404, {"message": "no trial 9"})]
    sleeps: list[float] = []
    with serve(answers=answers, keep_alive=True) as server:
        session = _quick(server.server_port, sleeps)
        assert session.request("GET", "/x") == {"done": 1}
        with pytest.raises(APIError) as info:
            session.request("GET", "/api/v1/trials/9")
        session.close()
    assert info.value.status == 404 and info.value.message == "no trial 9"
    assert sleeps == [0.05, 0.1]  # the same backoff as without keep-alive
    assert len(server.seen) == 4 and len(server.connections) == 1


def test_a_connection_the_master_closed_is_replaced_without_a_retry() -> None:
    """The master hangs up after each answer without saying so (its idle timeout)."""
    sleeps: list[float] = []
    with serve(keep_alive=True) as server:
        server.hang_up_after_answer = True
        session = _quick(server.server_port, sleeps)
        for i in range(3):
            time.sleep(0.05)  # the hang-up reaches the client
            assert session.request("POST", "/m", body={"i": i}) == {}
        session.close()
    assert [s["body"] for s in server.seen] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert len(server.connections) == 3
    assert sleeps == []


def test_a_request_that_fails_on_a_closed_kept_connection_is_sent_again_on_a_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hang-up is not seen before sending (it races the request): the request fails with no
    answer and goes again at once on a new connection, not counted as a retry."""
    monkeypatch.setattr(session_module, "_closed_by_peer", lambda sock: False)
    sleeps: list[float] = []
    with serve(keep_alive=True) as server:
        server.hang_up_after_answer = True
        session = _quick(server.server_port, sleeps)
        session.request("POST", "/m", body={"i": 0})
        time.sleep(0.05)
        assert session.request("POST", "/m", body={"i": 1}) == {}
        session.close()
    assert [s["body"] for s in server.seen] == [{"i": 0}, {"i": 1}]
    assert len(server.connections) == 2
    assert sleeps == []


def test_kept_connection_survives_a_master_restart() -> None:
    """The master dies with the connection open, stays away ~1 s, and comes back on its port."""
    sleeps: list[float] = []
    with serve(keep_alive=True) as first:
        port = first.server_port
        session = _quick(port, sleeps)
        session.request("POST", "/m", body={"v": 0})
    started = threading.Event()
    done = threading.Event()
    servers: list[_Server] = []

    def master_comes_back() -> None:
        time.sleep(1.0)
        with serve(port, answers=[(200, {"stored": True})], keep_alive=True) as second:
            servers.append(second)
            started.set()
            done.wait(10)

    back = threading.Thread(target=master_comes_back)
    back.start()
    try:
        assert session.request("POST", "/m", body={"v": 1}) == {"stored": True}
        assert session.request("POST", "/m", body={"v": 2}) == {}  # on the new connection
        session.close()
    finally:
        done.set()
        back.join(10)
    assert started.is_set() and sleeps  # the outage went through the retry policy
    (second,) = servers
    assert [s["body"] for s in second.seen] == [{"v": 1}, {"v": 2}]
    assert len(second.connections) == 1


def test_unreachable_after_a_kept_connection_still_gives_up_after_the_policy() -> None:
    sleeps: list[float] = []
    with serve(keep_alive=True) as server:
        port = server.server_port
        ticks = iter(range(0, 1000)).__next__
        session = Session(
            f"http://127.0.0.1:{port}",
            "tok",
            retry=RetryPolicy(outage_s=5, first_backoff_s=1, max_backoff_s=2),
            sleep=sleeps.append,
            clock=lambda: float(ticks()),
            jitter=lambda: 0.0,
        )
        session.request("GET", "/x")
    with pytest.raises(MasterUnreachable):
        session.request("GET", "/x")
    assert sleeps and all(s <= 2 for s in sleeps)


def test_a_proxy_or_an_odd_url_goes_through_urllib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert session_module._Endpoint.parse("http://127.0.0.1:8080") is None
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    assert session_module._Endpoint.parse("http://127.0.0.1:8080") is not None
    assert session_module._Endpoint.parse("ftp://127.0.0.1") is None


def test_an_https_master_gets_a_verifying_tls_connection() -> None:
    endpoint = session_module._Endpoint.parse("https://127.0.0.1:8443/prefix/")
    assert endpoint is not None and endpoint.prefix == "/prefix"
    conn = endpoint.connect(5.0)  # no I/O until the first request
    assert isinstance(conn, http.client.HTTPSConnection)
    assert conn._context.verify_mode == ssl.CERT_REQUIRED  # type: ignore[attr-defined]


OUTAGE = "RESOLUTE_MASTER_OUTAGE_S"


@pytest.mark.parametrize(
    ("environ", "outage"),
    [({}, 600.0), ({OUTAGE: "5"}, 5.0), ({OUTAGE: "0"}, 0.0), ({OUTAGE: "2.5"}, 2.5)],
)
def test_the_outage_budget_comes_from_the_environment(
    environ: dict[str, str], outage: float
) -> None:
    assert RetryPolicy.from_env(environ).outage_s == outage


@pytest.mark.parametrize("raw", ["-1", "soon", "", "nan", "inf", "5\x00"])
def test_a_bad_outage_budget_is_refused_by_name(raw: str) -> None:
    with pytest.raises(ValueError, match="RESOLUTE_MASTER_OUTAGE_S"):
        RetryPolicy.from_env({"RESOLUTE_MASTER_OUTAGE_S": raw})


def test_a_session_takes_its_default_policy_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RESOLUTE_MASTER_OUTAGE_S", "7")
    assert Session("http://127.0.0.1:9", None).retry.outage_s == 7.0
    assert Session("http://127.0.0.1:9", None, retry=NO_RETRY).retry.outage_s == 0.0


# --- the master's database is away: 503 with Retry-After ---------------------------------------


@pytest.mark.parametrize(
    ("retry_after", "pauses"),
    [
        (None, [0.05, 0.1]),  # the transport's own backoff
        ("1", [1.0, 1.0]),  # at least what the master asks
        ("30", [0.2, 0.2]),  # but never past max_backoff_s
        ("soon", [0.05, 0.1]),  # not a number of seconds: ignored
    ],
)
def test_a_503_is_retried_after_the_masters_retry_after(
    retry_after: str | None, pauses: list[float]
) -> None:
    busy = {"message": "the database is unavailable; retry shortly"}
    if retry_after is not None:
        busy["retry_after"] = retry_after
    sleeps: list[float] = []
    with serve(answers=[(503, busy), (503, busy), (200, {"stored": 1})], keep_alive=True) as server:
        session = Session(
            f"http://127.0.0.1:{server.server_port}",
            "tok",
            retry=RetryPolicy(outage_s=30, first_backoff_s=0.05, max_backoff_s=0.2),
            sleep=sleeps.append,
            jitter=lambda: 0.0,
        )
        if retry_after == "1":
            session.retry = RetryPolicy(outage_s=30, first_backoff_s=0.05, max_backoff_s=10)
        assert session.request("POST", "/api/v1/trials/1/metrics", body={"v": 1}) == {"stored": 1}
        session.close()
    assert sleeps == pauses
    assert len(server.seen) == 3


def test_jitter_stretches_each_pause_by_up_to_half() -> None:
    policy = RetryPolicy(first_backoff_s=1.0, max_backoff_s=10.0)
    assert [policy.backoff(n, 0.0) for n in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]
    assert [policy.backoff(n, 0.999) for n in range(2)] == pytest.approx([1.4995, 2.999])
    assert policy.backoff(0, 0.0, retry_after=3.0) == 3.0


def test_the_default_outage_budget_is_ten_minutes() -> None:
    assert RetryPolicy().outage_s == 600.0
