"""The gate in front of a notebook's or TensorBoard's server lets through only requests that
carry the task's secret; it listens on a non-default loopback address (127.0.0.2), as it would on
the agent's advertised one, while the service stays on 127.0.0.1."""

from __future__ import annotations

import http.client
import http.server
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.interactive_gate import admits, head_secret, open_gate

SECRET = "s3cret-" + "x" * 30


class _Hello(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = f"hello {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def gate() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    listener, port = open_gate("127.0.0.2", server.server_address[1], SECRET)
    try:
        yield port
    finally:
        listener.close()
        server.shutdown()
        server.server_close()


def _get(port: int, headers: dict[str, str], paths: tuple[str, ...] = ("/a",)) -> list:
    conn = http.client.HTTPConnection("127.0.0.2", port, timeout=10)
    try:
        out = []
        for path in paths:
            conn.request("GET", path, headers=headers)
            reply = conn.getresponse()
            out.append((reply.status, reply.read().decode()))
        return out
    finally:
        conn.close()


def test_the_secret_lets_a_request_through_and_keeps_the_connection(gate: int) -> None:
    got = _get(gate, {"X-Resolute-Proxy-Secret": SECRET}, ("/a", "/b"))
    assert got == [(200, "hello /a"), (200, "hello /b")]


@pytest.mark.parametrize(
    "headers",
    [{}, {"X-Resolute-Proxy-Secret": "wrong"}, {"X-Resolute-Proxy-Secret": SECRET + "x"},
     {"X-Other": SECRET}, {"Authorization": f"Bearer {SECRET}"}],
)  # fmt: skip
def test_a_direct_request_without_the_secret_is_refused(gate: int, headers: dict) -> None:
    [(status, body)] = _get(gate, headers)
    assert status == 403 and "only through the Resolute master's proxy" in body


def test_a_head_that_never_ends_is_refused(gate: int) -> None:
    import socket

    with socket.create_connection(("127.0.0.2", gate), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nX-Filler: " + b"a" * (200 * 1024))
        assert s.recv(64).startswith(b"HTTP/1.1 403")


@pytest.mark.parametrize(
    ("head", "secret"),
    [
        (b"GET / HTTP/1.1\r\nx-resolute-proxy-secret: abc", b"abc"),
        (b"GET / HTTP/1.1\r\nX-Resolute-Proxy-Secret:   abc  \r\nHost: h", b"abc"),
        (b"GET / HTTP/1.1\r\nHost: h", None),
        # the request line is not a header, whatever it says
        (b"x-resolute-proxy-secret: abc\r\nHost: h", None),
    ],
)
def test_head_secret(head: bytes, secret: bytes | None) -> None:
    assert head_secret(head) == secret


@given(st.binary(max_size=40))
def test_only_the_exact_secret_is_admitted(given_secret: bytes) -> None:
    head = b"GET / HTTP/1.1\r\nX-Resolute-Proxy-Secret: " + given_secret.replace(b"\r\n", b"")
    want = given_secret.replace(b"\r\n", b"").strip() == b"abcdef"
    assert admits(head, b"abcdef") == want


def test_what_a_task_reports() -> None:
    from controlplane.api.schemas.interactive import AllocationProxyAddress
    from harness.interactive import reachable

    # sshd listens on the advertised address itself; only the shell's key logs in
    assert reachable("SHELL", "127.0.0.2", 2222) == {"proxyAddress": "127.0.0.2:2222"}
    one, two = reachable("NOTEBOOK", "127.0.0.2", 8888), reachable("TENSORBOARD", "127.0.0.2", 1)
    for made in (one, two):
        assert made["proxyAddress"].startswith("127.0.0.2:") and made["proxySecret"]
        # the master takes it as reported
        parsed = AllocationProxyAddress.model_validate(made)
        assert parsed.proxy_secret == made["proxySecret"]
    assert one["proxySecret"] != two["proxySecret"]
