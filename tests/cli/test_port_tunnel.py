"""`det experiment create … -f -p LOCAL:PORT` (Determined's `--publish`): the flag's forms, and
the local listener carrying a connection's bytes over the master's WebSocket proxy."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
import websockets

from cli import port_tunnel
from cli.errors import CliError


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["8265"], {8265: 8265}),
        (["18265:8265", "6000"], {18265: 8265, 6000: 6000}),
        ([], {}),
    ],
)
def test_parse_publish(values: list[str], expected: dict[int, int]) -> None:
    assert port_tunnel.parse_publish(values) == expected


@pytest.mark.parametrize("value", ["x", "1:2:3", "0", "70000", "8000:", ":8000", "８０"])
def test_bad_publish_values(value: str) -> None:
    with pytest.raises(CliError, match="--publish"):
        port_tunnel.parse_publish([value])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_local_connection_is_one_websocket_with_the_token() -> None:
    seen: list[tuple[str, str | None]] = []

    async def handler(ws: Any) -> None:
        seen.append((ws.request.path, ws.request.headers.get("authorization")))
        async for message in ws:
            await ws.send(message)

    async with websockets.serve(handler, "127.0.0.1", 0) as server:
        master = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        local = _free_port()

        def use() -> bytes:
            with (
                port_tunnel.listening(master, "7.abc", {local: 6000}, "tok"),
                socket.create_connection(("127.0.0.1", local), timeout=10) as s,
            ):
                s.sendall(b"ping")
                return s.recv(100)

        got = await asyncio.to_thread(use)
    assert got == b"ping"
    assert seen == [("/proxy/7.abc:6000/", "Bearer tok")]
