"""An in-process agent double that speaks the real agent protocol over a real WebSocket.

It registers artificial CPU slots, records the containers the master asks it to start, reports
them RUNNING, and exits them when a test says so (or when the master sends SIGKILL). It sends
heartbeats at the interval the master asks for, can go silent (socket open, nothing sent),
reconnect with ``reconnect=true``, answer the reattach list, and report agent-side log lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlencode

from websockets.asyncio.client import ClientConnection, connect

from agent.protocol import (
    AGENTS_PATH,
    AgentShutdown,
    AgentStarted,
    Container,
    ContainerFailure,
    ContainerLog,
    ContainerOutput,
    ContainerReattached,
    ContainerState,
    ContainerStateChanged,
    Device,
    DeviceType,
    FailureType,
    Heartbeat,
    MasterSetAgentOptions,
    OutputLine,
    OutputStored,
    SignalContainer,
    StartContainer,
    TaskSpec,
    decode_to_agent,
    encode,
)

# "known": ack the listed containers this agent runs; "all": ack every listed container as
# its own (an agent process that restarted and found them by label); "none": ack nothing.
ReattachMode = Literal["known", "all", "none"]


@dataclass
class FakeAgent:
    ws_url: str
    agent_id: str
    slots: int
    pool: str = "default"
    auto_run: bool = True
    reconnect: bool = False
    heartbeats: bool = True
    reattach: ReattachMode = "known"
    # Containers to ack as failed / as exited with a code, whatever the mode says.
    reattach_failures: dict[str, ContainerFailure] = field(default_factory=dict)
    reattach_exits: dict[str, int] = field(default_factory=dict)
    # SIGKILL does not end the container (a process that will not die, or a wedged runtime).
    ignore_kill: bool = False
    device_brand: str = "fake"
    started: dict[str, StartContainer] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    signals: list[SignalContainer] = field(default_factory=list)
    stored: list[OutputStored] = field(default_factory=list)
    shutdown: AgentShutdown | None = None
    options: MasterSetAgentOptions | None = None
    _ws: ClientConnection | None = None
    _reader: asyncio.Task[None] | None = None
    _beater: asyncio.Task[None] | None = None

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
            Device(id=i, brand=self.device_brand, uuid=f"{self.agent_id}-{i}", type=DeviceType.CPU)
            for i in range(self.slots)
        )

    async def connect(self) -> FakeAgent:
        """Handshake; on refusal, `shutdown` holds the master's reason and the socket is closed."""
        self.shutdown = None
        self._ws = await connect(self.url, open_timeout=10)
        first = decode_to_agent(await self._ws.recv())
        if isinstance(first, AgentShutdown):
            self.shutdown = first
            return self
        assert isinstance(first, MasterSetAgentOptions), first
        self.options = first
        acks = self._acks(first.containers_to_reattach)
        await self._ws.send(
            encode(AgentStarted(version="test", devices=self.devices(), containers_reattached=acks))
        )
        self._reader = asyncio.create_task(self._read())
        if self.heartbeats:
            self._beater = asyncio.create_task(self._beat(first.heartbeat_interval_s))
        return self

    def _acks(self, listed: tuple[Container, ...]) -> tuple[ContainerReattached, ...]:
        acks: list[ContainerReattached] = []
        for container in listed:
            cid = container.id
            if cid in self.reattach_failures:
                failed = container.model_copy(update={"state": ContainerState.TERMINATED})
                acks.append(
                    ContainerReattached(container=failed, failure=self.reattach_failures[cid])
                )
            elif cid in self.reattach_exits:
                code = self.reattach_exits[cid]
                failure = (
                    None
                    if code == 0
                    else ContainerFailure(type=FailureType.CONTAINER_FAILED, exit_code=code)
                )
                exited = container.model_copy(update={"state": ContainerState.TERMINATED})
                acks.append(ContainerReattached(container=exited, failure=failure))
            elif self.reattach == "all" or (self.reattach == "known" and cid in self.running):
                self._adopt(container)
                running = container.model_copy(update={"state": ContainerState.RUNNING})
                acks.append(ContainerReattached(container=running))
        return tuple(acks)

    def _adopt(self, container: Container) -> None:
        if container.id not in self.started:
            allocation_id = container.id.rpartition("-")[0]
            spec = TaskSpec(allocation_id=allocation_id, task_id="", task_type="TRIAL")
            self.started[container.id] = StartContainer(container=container, spec=spec)
        self.running.add(container.id)

    async def _beat(self, interval: float) -> None:
        with contextlib.suppress(Exception):
            while True:
                await asyncio.sleep(interval)
                assert self._ws is not None
                await self._ws.send(encode(Heartbeat()))

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
                    if message.container_id in self.started and not self.ignore_kill:
                        await self.exit(message.container_id, 137)
                elif isinstance(message, OutputStored):
                    self.stored.append(message)
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

    async def log(self, container_id: str, message: str, level: str = "INFO") -> None:
        assert self._ws is not None
        line = ContainerLog(
            container_id=container_id, timestamp=time.time(), level=level, message=message
        )
        await self._ws.send(encode(line))

    async def output(self, container_id: str, seq: int, lines: list[tuple[str, str]]) -> None:
        """A ContainerOutput batch of (stream, text) lines, as a direct task's agent sends."""
        assert self._ws is not None
        batch = ContainerOutput(
            container_id=container_id,
            seq=seq,
            lines=tuple(OutputLine(timestamp=time.time(), stream=s, text=t) for s, t in lines),
        )
        await self._ws.send(encode(batch))

    async def exit(self, container_id: str, code: int = 0) -> None:
        if container_id in self.running or container_id in self.started:
            await self.report(container_id, ContainerState.TERMINATED, exit_code=code)

    def allocations(self) -> set[str]:
        return {s.spec.allocation_id for cid, s in self.started.items() if cid in self.running}

    def container_of(self, allocation_id: str) -> str:
        for cid, start in self.started.items():
            if start.spec.allocation_id == allocation_id:
                return cid
        raise AssertionError(f"{allocation_id} was never started on {self.agent_id}")

    async def go_silent(self) -> None:
        """Stop sending anything (heartbeats included) while the socket stays open."""
        await self._stop_task(self._beater)
        self._beater = None

    async def drop(self) -> None:
        """Lose the connection (containers keep running here, as with a real agent)."""
        await self._stop_task(self._beater)
        if self._ws is not None:
            await self._ws.close()
        await self._stop_task(self._reader)
        self._beater = self._reader = None

    async def reconnect_now(self) -> FakeAgent:
        """Drop the connection if any, then dial again with ``reconnect=true``."""
        await self.drop()
        self.reconnect = True
        return await self.connect()

    @staticmethod
    async def _stop_task(task: asyncio.Task[None] | None) -> None:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def close(self) -> None:
        await self.drop()


@contextlib.asynccontextmanager
async def fake_agents() -> AsyncIterator[list[FakeAgent]]:
    """A list tests append agents to; every agent is closed on exit."""
    made: list[FakeAgent] = []
    try:
        yield made
    finally:
        for agent in made:
            await agent.close()
