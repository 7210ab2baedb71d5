"""A test-controlled master end of the agent socket: a real WebSocket server on loopback.

It speaks `agent.protocol` exactly as the master does for the handshake (options first, then
AgentStarted), and then lets the test drive the agent: send StartContainer / SignalContainer /
AgentShutdown, read what the agent reports, drop the connection, or stop and start again on the
same port (a master restart). The real master is used where its own behaviour is under test.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from agent.protocol import (
    AGENTS_PATH,
    AgentShutdown,
    AgentStarted,
    Container,
    ContainerLog,
    ContainerOutput,
    ContainerState,
    ContainerStateChanged,
    Heartbeat,
    MasterInfo,
    MasterSetAgentOptions,
    Message,
    OutputStored,
    decode_to_master,
    encode,
)

INFO = MasterInfo(version="test", master_id="fake-master", cluster_id="c-1", cluster_name="fake")


@dataclass
class AgentSession:
    """One accepted connection, from the agent's AgentStarted on."""

    ws: ServerConnection
    query: dict[str, str]
    started: AgentStarted
    messages: list[Message] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, message: Message) -> None:
        await self.ws.send(encode(message))

    async def wait_for(self, match: Callable[[Message], bool], timeout: float = 20.0) -> Message:
        """The first message (already received or coming) that `match` accepts."""
        deadline = asyncio.get_running_loop().time() + timeout
        seen = 0
        while True:
            for message in self.messages[seen:]:
                if match(message):
                    return message
            seen = len(self.messages)
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                names = [type(m).__name__ for m in self.messages]
                raise AssertionError(f"no matching message within {timeout}s; got {names}")
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), left)

    async def state(
        self, container_id: str, state: ContainerState, timeout: float = 20.0
    ) -> ContainerStateChanged:
        message = await self.wait_for(
            lambda m: (
                isinstance(m, ContainerStateChanged)
                and m.container.id == container_id
                and m.container.state is state
            ),
            timeout,
        )
        assert isinstance(message, ContainerStateChanged)
        return message

    def states(self, container_id: str) -> list[ContainerState]:
        return [
            m.container.state
            for m in self.messages
            if isinstance(m, ContainerStateChanged) and m.container.id == container_id
        ]

    def logs(self, container_id: str) -> list[ContainerLog]:
        return [
            m
            for m in self.messages
            if isinstance(m, ContainerLog) and m.container_id == container_id
        ]

    def output(self, container_id: str) -> list[ContainerOutput]:
        return [
            m
            for m in self.messages
            if isinstance(m, ContainerOutput) and m.container_id == container_id
        ]

    def output_lines(self, container_id: str) -> list[tuple[str, str]]:
        """(stream, text) of every line received, in order (a batch sent twice counts twice)."""
        return [(line.stream, line.text) for m in self.output(container_id) for line in m.lines]

    def heartbeats(self) -> int:
        return sum(isinstance(m, Heartbeat) for m in self.messages)


@dataclass
class FakeMaster:
    port: int = 0
    heartbeat_interval_s: float = 5.0
    to_reattach: tuple[Container, ...] = ()
    # The pool's default task Python the master sends (MasterSetAgentOptions.task_python).
    task_python: str = ""
    refuse: str | None = None
    # Refuse only connections that say reconnect=true (the master forgot this agent).
    refuse_reconnect: str | None = None
    # Answer every ContainerOutput with OutputStored, as the master does once it stored it.
    store_output: bool = True
    sessions: list[AgentSession] = field(default_factory=list)
    hellos: list[dict[str, str]] = field(default_factory=list)
    _server: Server | None = None
    _new: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def host(self) -> str:
        return "127.0.0.1"

    async def start(self) -> FakeMaster:
        self._server = await serve(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1] if self.port == 0 else self.port
        return self

    async def stop(self) -> None:
        """Close the listener and every connection (as a master process dying would)."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    async def _handle(self, ws: ServerConnection) -> None:
        url = urlsplit(ws.request.path if ws.request else "")
        query = dict(parse_qsl(url.query))
        self.hellos.append(query)
        if url.path != AGENTS_PATH:
            await ws.close(1008, "wrong path")
            return
        refusal = self.refuse
        if query.get("reconnect") == "true" and self.refuse_reconnect is not None:
            refusal = self.refuse_reconnect
        if refusal is not None:
            await ws.send(encode(AgentShutdown(error=refusal)))
            await ws.close(1008, refusal[:100])
            return
        options = MasterSetAgentOptions(
            master_info=INFO,
            containers_to_reattach=self.to_reattach,
            heartbeat_interval_s=self.heartbeat_interval_s,
            task_python=self.task_python,
        )
        await ws.send(encode(options))
        try:
            started = decode_to_master(await asyncio.wait_for(ws.recv(), 30))
        except (ConnectionClosed, TimeoutError):
            return
        assert isinstance(started, AgentStarted), started
        session = AgentSession(ws=ws, query=query, started=started)
        self.sessions.append(session)
        self._new.set()
        try:
            async for frame in ws:
                message = decode_to_master(frame)
                session.messages.append(message)
                session._arrived.set()
                if isinstance(message, ContainerOutput) and self.store_output:
                    stored = OutputStored(container_id=message.container_id, seq=message.seq)
                    await ws.send(encode(stored))
        except ConnectionClosed:
            pass
        finally:
            session.closed.set()
            session._arrived.set()

    async def session(self, number: int, timeout: float = 20.0) -> AgentSession:
        """The `number`-th session (1-based), waiting for it to open."""
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.sessions) < number:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise AssertionError(f"only {len(self.sessions)} agent sessions within {timeout}s")
            self._new.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._new.wait(), left)
        return self.sessions[number - 1]


@contextlib.asynccontextmanager
async def fake_master(**kwargs: object) -> AsyncIterator[FakeMaster]:
    master = await FakeMaster(**kwargs).start()  # type: ignore[arg-type]
    try:
        yield master
    finally:
        await master.stop()
