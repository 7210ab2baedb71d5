"""Connected agents, in memory: what the scheduler may place work on, and each agent's outbox.

An agent lives here from its `AgentStarted` until it disconnects; a disconnected agent stays,
disabled and draining (as in Determined), so its running allocations keep their slots until the
agent comes back or its reconnect wait runs out (`agent_loss`). The user's enable/drain choice
is kept apart from the connection, so a reconnected agent gets its previous state back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from agent.protocol import Device, Message

OUTBOX_SIZE = 1024


@dataclass
class AgentHandle:
    id: str
    resource_pool: str
    devices: tuple[Device, ...]
    version: str
    registered_at: datetime
    addresses: tuple[str, ...] = ()
    hostname: str = ""
    enabled: bool = True
    draining: bool = False
    connected: bool = True
    disconnected_at: datetime | None = None
    # When its cloud announced the machine's interruption: an exit from then on is not the
    # user's (domain/trial_exit.py, AgentFate.INTERRUPTED).
    interrupted_at: datetime | None = None
    # Slots an admin disabled one by one (`det slot disable`): nothing new is placed on them;
    # what runs there finishes. In memory, as the agent's own enabled flag.
    disabled_devices: set[int] = field(default_factory=set)
    outbox: asyncio.Queue[Message] = field(default_factory=lambda: asyncio.Queue(OUTBOX_SIZE))

    @property
    def slots(self) -> int:
        return len(self.devices)

    def free_devices(self, taken: set[int]) -> list[int]:
        """Device ids new work may use: not taken and not disabled."""
        return [
            d.id for d in self.devices if d.id not in taken and d.id not in self.disabled_devices
        ]

    @property
    def schedulable(self) -> bool:
        return self.connected and self.enabled and not self.draining

    @property
    def shown_enabled(self) -> bool:
        """Enabled as users see it: a disconnected agent shows as disabled."""
        return self.enabled and self.connected

    @property
    def shown_draining(self) -> bool:
        """Draining as users see it: a disconnected agent shows as draining."""
        return self.draining or not self.connected

    def send(self, message: Message) -> None:
        """Queue a message; while disconnected it waits for the reconnect (Determined buffers)."""
        self.outbox.put_nowait(message)


class DuplicateAgent(Exception):
    """A second live connection for an agent id that already has one."""


class AgentRegistry:
    def __init__(self) -> None:
        self._agents: dict[str, AgentHandle] = {}

    def register(self, handle: AgentHandle) -> AgentHandle:
        """Add a freshly started agent, or take over the record of one that reconnects."""
        old = self._agents.get(handle.id)
        if old is not None and old.connected:
            raise DuplicateAgent(f"agent {handle.id!r}: websocket already connected")
        if old is not None:
            handle.enabled, handle.draining = old.enabled, old.draining
            handle.interrupted_at = old.interrupted_at
            while not old.outbox.empty():
                handle.send(old.outbox.get_nowait())
        self._agents[handle.id] = handle
        return handle

    def disconnected(self, agent_id: str, now: datetime) -> None:
        handle = self._agents.get(agent_id)
        if handle is not None:
            handle.connected = False
            handle.disconnected_at = now

    def remove(self, agent_id: str) -> None:
        self._agents.pop(agent_id, None)

    def remove_if_disconnected(self, agent_id: str) -> bool:
        """Forget a lost agent, unless it came back meanwhile; True when it was removed."""
        handle = self._agents.get(agent_id)
        if handle is None or handle.connected:
            return False
        del self._agents[agent_id]
        return True

    def get(self, agent_id: str) -> AgentHandle | None:
        return self._agents.get(agent_id)

    def in_pool(self, pool: str) -> list[AgentHandle]:
        return sorted(
            (a for a in self._agents.values() if a.resource_pool == pool), key=lambda a: a.id
        )

    def __iter__(self) -> Iterator[AgentHandle]:
        return iter(sorted(self._agents.values(), key=lambda a: a.id))

    def __len__(self) -> int:
        return len(self._agents)
