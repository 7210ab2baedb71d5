"""A zero-work TCP splice: `python benchmarks/splice.py LISTEN_PORT TARGET_HOST:PORT`.

The floor for one Python hop in front of a service: bytes in, bytes out, nothing parsed or
checked (asyncio protocols, on uvloop when it is installed). benchmarks/interactive.py puts
one in front of a task's gate to show what any proxy written like ours must cost at least.
"""

from __future__ import annotations

import asyncio
import sys


class Half(asyncio.Protocol):
    """One side of a spliced pair: what it reads, its peer writes."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: Half | None = None
        self.pending: list[bytes] = []
        self.dialing: asyncio.Task[None] | None = None  # held: the loop keeps weak references

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.write(data)
        else:
            self.pending.append(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()


async def serve(port: int, host: str, target_port: int) -> None:
    loop = asyncio.get_running_loop()

    def accepted() -> Half:
        client = Half()

        async def dial() -> None:
            try:
                _, upstream = await loop.create_connection(Half, host, target_port)
            except OSError:
                if client.transport is not None:
                    client.transport.close()
                return
            upstream.peer, client.peer = client, upstream
            for data in client.pending:
                upstream.transport.write(data)  # type: ignore[union-attr]
            client.pending.clear()

        client.dialing = loop.create_task(dial())
        return client

    server = await loop.create_server(accepted, "127.0.0.1", port)
    await server.serve_forever()


def main(argv: list[str]) -> int:
    port, target = int(argv[0]), argv[1]
    host, _, target_port = target.rpartition(":")
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(port, host, int(target_port)))
    else:
        uvloop.run(serve(port, host, int(target_port)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
