"""An in-process agent double that speaks the real agent protocol over a real WebSocket.

It registers artificial CPU slots, records the containers the master asks it to start, reports
them RUNNING, and exits them when a test says so (or when the master sends SIGKILL).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlencode

from websockets.asyncio.client import ClientConnection, connect

from agent.protocol import (
    AGENTS_PATH,
    AgentShutdown,
    AgentStarted,
    Container,
    ContainerState,
    ContainerStateChanged,
    Device,
    DeviceType,
    MasterSetAgentOptions,
    SignalContainer,
    StartContainer,
    decode_to_agent,
    encode,
)


@dataclass
class FakeAgent:
    ws_url: str
    agent_id: str
    slots: int
    pool: str = "default"
    auto_run: bool = True
    reconnect: bool = False
    started: dict[str, StartContainer] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    signals: list[SignalContainer] = field(default_factory=list)
    shutdown: AgentShutdown | None = None
    options: MasterSetAgentOptions | None = None
    _ws: ClientConnection | None = None
    _reader: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        query = urlencode(
            {
                "id": self.agent_id,
                "version": "test",
                "resource_pool": self.pool,
                "reconnect": str(self.reconnect).lower(),
                "hostname": "localhost",
            }
        )
        return f"{self.ws_url}{AGENTS_PATH}?{query}"

    def devices(self) -> tuple[Device, ...]:
        return tuple(
            Device(id=i, brand="fake", uuid=f"{self.agent_id}-{i}", type=DeviceType.CPU)
            for i in range(self.slots)
        )

    async def connect(self) -> FakeAgent:
        """Handshake; on refusal, `shutdown` holds the master's reason and the socket is closed."""
        self._ws = await connect(self.url, open_timeout=10)
        first = decode_to_agent(await self._ws.recv())
        if isinstance(first, AgentShutdown):
            self.shutdown = first
            return self
        assert isinstance(first, MasterSetAgentOptions), first
        self.options = first
        await self._ws.send(encode(AgentStarted(version="test", devices=self.devices())))
        self._reader = asyncio.create_task(self._read())
        return self

    async def send_raw(self, text: str) -> None:
        assert self._ws is not None
        await self._ws.send(text)

    async def _read(self) -> None:
        assert self._ws is not None
        with contextlib.suppress(Exception):
            async for frame in self._ws:
                message = decode_to_agent(frame)
                if isinstance(message, StartContainer):
                    cid = message.container.id
                    self.started[cid] = message
                    if self.auto_run:
                        await self.report(cid, ContainerState.RUNNING)
                elif isinstance(message, SignalContainer):
                    self.signals.append(message)
                    if message.container_id in self.started:
                        await self.exit(message.container_id, 137)
                elif isinstance(message, AgentShutdown):
                    self.shutdown = message

    async def report(
        self, container_id: str, state: ContainerState, exit_code: int | None = None
    ) -> None:
        assert self._ws is not None
        start = self.started[container_id]
        if state is ContainerState.RUNNING:
            self.running.add(container_id)
        if state is ContainerState.TERMINATED:
            self.running.discard(container_id)
        await self._ws.send(
            encode(
                ContainerStateChanged(
                    container=Container(
                        id=container_id, state=state, devices=start.container.devices
                    ),
                    allocation_id=start.spec.allocation_id,
                    exit_code=exit_code,
                )
            )
        )

    async def exit(self, container_id: str, code: int = 0) -> None:
        if container_id in self.running or container_id in self.started:
            await self.report(container_id, ContainerState.TERMINATED, exit_code=code)

    def allocations(self) -> set[str]:
        return {s.spec.allocation_id for cid, s in self.started.items() if cid in self.running}

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader


@contextlib.asynccontextmanager
async def fake_agents() -> AsyncIterator[list[FakeAgent]]:
    """A list tests append agents to; every agent is closed on exit."""
    made: list[FakeAgent] = []
    try:
        yield made
    finally:
        for agent in made:
            await agent.close()
