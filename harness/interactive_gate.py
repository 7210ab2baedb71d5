"""The gate in front of a notebook's or TensorBoard's server: only the master's proxy gets in.

The service itself listens on loopback; the gate listens on the address the agent advertises
(reachable from the master's machine) and lets a connection through only when its first request
carries the secret this task chose and reported to the master (header X-Resolute-Proxy-Secret,
which the proxy adds to every request). Anyone else who finds the port gets 403 and is closed.
Standard library only, like the rest of the harness.
"""

from __future__ import annotations

import contextlib
import hmac
import socket
import threading

HEADER = b"x-resolute-proxy-secret"
MAX_HEAD = 64 * 1024
CHUNK = 64 * 1024
_WHY = b"this service answers only through the Resolute master's proxy\n"
REFUSED = (
    b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(_WHY), _WHY)
)


def head_secret(head: bytes) -> bytes | None:
    """The secret header's value in an HTTP request head (None: absent)."""
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == HEADER:
            return value.strip()
    return None


def admits(head: bytes, secret: bytes) -> bool:
    given = head_secret(head)
    return given is not None and hmac.compare_digest(given, secret)


def _read_head(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            return None
        chunk = conn.recv(CHUNK)
        if not chunk:
            return None
        data += chunk
    return data


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    # An end of input is passed on as a half close (the other direction may still be talking);
    # a broken connection closes both directions of both sockets.
    try:
        while chunk := src.recv(CHUNK):
            dst.sendall(chunk)
        how, which = socket.SHUT_WR, (dst,)
    except OSError:
        how, which = socket.SHUT_RDWR, (dst, src)
    for s in which:
        with contextlib.suppress(OSError):
            s.shutdown(how)


def _serve(conn: socket.socket, upstream_port: int, secret: bytes) -> None:
    with conn:
        try:
            conn.settimeout(30)
            data = _read_head(conn)
            if data is None or not admits(data.partition(b"\r\n\r\n")[0], secret):
                conn.sendall(REFUSED)
                return
            conn.settimeout(None)
            upstream = socket.create_connection(("127.0.0.1", upstream_port), timeout=10)
        except OSError:
            return
        with upstream:
            upstream.settimeout(None)
            # Small writes both ways (requests, WebSocket frames): no Nagle delay on either leg.
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream.sendall(data)
            back = threading.Thread(target=_pipe, args=(upstream, conn), daemon=True)
            back.start()
            _pipe(conn, upstream)
            back.join()


def open_gate(
    host: str, upstream_port: int, secret: str, port: int = 0
) -> tuple[socket.socket, int]:
    """Listen on host:port (0: a free port) and forward admitted connections to
    127.0.0.1:upstream_port from a daemon thread; returns the listening socket and its port."""
    listener = socket.create_server((host, port), backlog=128)
    key = secret.encode()

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=_serve, args=(conn, upstream_port, key), daemon=True).start()

    threading.Thread(target=accept, daemon=True, name="proxy-gate").start()
    return listener, int(listener.getsockname()[1])
