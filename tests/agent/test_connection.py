"""agent/connection.py against a bare WebSocket server: what the agent asks for when it dials."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

from agent.connection import Refused, dial
from agent.protocol import AgentShutdown, encode
from tests.agent.conftest import agent_settings


async def test_the_agent_socket_asks_for_no_compression(tmp_path: Path) -> None:
    """Its frames are small JSON on a local or cloud network: deflating each cost the master
    and the agent CPU per message (a zlib stream each way) for bytes nobody was short of."""
    seen: dict[str, Any] = {}

    async def master(ws: ServerConnection) -> None:
        seen["offered"] = ws.request.headers.get("Sec-WebSocket-Extensions")
        seen["agreed"] = ws.response.headers.get("Sec-WebSocket-Extensions")
        await ws.send(encode(AgentShutdown(error="test over")))

    async with serve(master, "127.0.0.1", 0) as server:  # offers permessage-deflate by default
        port = server.sockets[0].getsockname()[1]
        settings = agent_settings(port, tmp_path)
        answer = await dial(settings, reconnect=False, version="test", hostname="test")
    assert answer == Refused("test over")
    assert seen == {"offered": None, "agreed": None}
