"""Reports waiting for the master, kept in order across disconnections.

Containers keep running while the master is away, so their state changes are queued here and
sent after the next AgentStarted. A message leaves the queue only once it has been written to a
socket; its `on_sent` hook runs then (a container is removed only after its exit was sent).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from agent.protocol import Message


@dataclass
class Envelope:
    message: Message
    on_sent: Callable[[], None] | None = None


class Outbox:
    def __init__(self) -> None:
        self._items: deque[Envelope] = deque()
        self._changed = asyncio.Event()

    def put(self, message: Message, on_sent: Callable[[], None] | None = None) -> None:
        self._items.append(Envelope(message, on_sent))
        self._changed.set()

    def put_first(self, messages: list[Message]) -> None:
        """Queue messages ahead of everything queued (in the order given): what was sent
        before a disconnection and must go again before what came after it."""
        self._items.extendleft(Envelope(m) for m in reversed(messages))
        if messages:
            self._changed.set()

    async def head(self) -> Envelope:
        """The oldest unsent message; waits for one."""
        while not self._items:
            self._changed.clear()
            await self._changed.wait()
        return self._items[0]

    def sent(self, envelope: Envelope) -> None:
        """Mark the head as written to the socket and run its hook."""
        if self._items and self._items[0] is envelope:
            self._items.popleft()
        if envelope.on_sent is not None:
            envelope.on_sent()

    def retain(self, keep: Callable[[Message], bool]) -> list[Envelope]:
        """Drop the messages `keep` refuses; returns the dropped ones, in order."""
        kept: deque[Envelope] = deque()
        dropped = []
        for envelope in self._items:
            (kept if keep(envelope.message) else dropped).append(envelope)
        self._items = kept
        return dropped

    def __iter__(self) -> Iterator[Message]:
        return (envelope.message for envelope in list(self._items))

    def __len__(self) -> int:
        return len(self._items)
