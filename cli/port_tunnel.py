"""Local listeners that reach a task's declared ports through the master's proxy: `det experiment
create … -f -p LOCAL:PORT` (Determined's `--publish`) keeps one open per port while it follows the
first trial. Each local connection is one WebSocket to `/proxy/{task id}:{port}/`, carrying its
bytes (the task declares the port `proxy_tcp: true`), authenticated with the session's token.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from collections.abc import Iterator
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from cli.errors import CliError
from cli.tls import master_trust
from cli.tunnel import ws_url


def parse_publish(values: list[str]) -> dict[int, int]:
    """`-p 8265` or `-p 18265:8265` (local:task), as Determined parses them."""
    out: dict[int, int] = {}
    for value in values:
        local, sep, task = value.partition(":")
        if not value.isascii():
            raise CliError(f"--publish {value!r}: use PORT or LOCAL_PORT:TASK_PORT")
        try:
            pair = (int(local), int(task)) if sep else (int(local), int(local))
        except ValueError:
            raise CliError(f"--publish {value!r}: use PORT or LOCAL_PORT:TASK_PORT") from None
        if not all(0 < p < 65536 for p in pair):
            raise CliError(f"--publish {value!r}: ports are 1-65535")
        out[pair[0]] = pair[1]
    return out


def _pump(conn: socket.socket, ws: ClientConnection) -> None:
    def upward() -> None:
        try:
            while chunk := conn.recv(65536):
                ws.send(chunk)
        except (OSError, ConnectionClosed):
            pass
        finally:
            ws.close()

    thread = threading.Thread(target=upward, daemon=True)
    thread.start()
    try:
        for message in ws:
            conn.sendall(message if isinstance(message, bytes) else message.encode())
    except (OSError, ConnectionClosed):
        pass
    finally:
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
        thread.join(5)


def _server(master: str, service: str, token: str | None, port: int) -> socketserver.TCPServer:
    url = ws_url(master, service)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    tls: dict[str, Any] = {}
    if url.startswith("wss://"):
        trust = master_trust()
        tls = {"ssl": trust.ssl_context(), "server_hostname": trust.server_name}

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            try:
                opened = connect(url, additional_headers=headers, max_size=None, **tls)
            except Exception:  # the master refused or is gone: this connection ends
                return
            with opened as ws:
                _pump(self.request, ws)

    class Server(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True

    return Server(("127.0.0.1", port), Handler)


@contextlib.contextmanager
def listening(
    master: str, task_id: str, ports: dict[int, int], token: str | None
) -> Iterator[None]:
    """Serve each local port (on loopback) for the task's port while the block runs."""
    servers: list[socketserver.TCPServer] = []
    try:
        for local, remote in ports.items():
            servers.append(_server(master, f"{task_id}:{remote}", token, local))
    except OSError as exc:
        for server in servers:
            server.server_close()
        raise CliError(f"--publish: cannot listen on a local port: {exc}") from None
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
