"""A task's output shipped by the agent, for tasks that run their command directly.

Every task used to run inside the harness launcher (``python3 -S -c ... launch``), which ships
its output to the master. A command without a context directory needs nothing else of the
launcher (no download; docker-init or the process supervisor passes signals on), so it runs its
command as the container's own: an interpreter's start less per task (13 to 15 ms of CPU on the
docker runtime, where a trivial `det cmd run true` costs about 200 ms of the machine's CPU), and
the command runs in images without Python. Its output then comes from the runtime's log (the
engine's log driver, the process runtime's files): the agent reads it from the start, cuts it
into lines and sends them to the master in ``ContainerOutput`` batches, all of them before the
container's TERMINATED report.

Pure parts first (which tasks run directly, cutting a byte stream into lines), then the shipper,
whose I/O (the chunks, the outbox, the clock) is passed in.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence

from agent.protocol import (
    MAX_OUTPUT_BATCH,
    MAX_OUTPUT_LINE_CHARS,
    ContainerOutput,
    OutputLine,
)

log = logging.getLogger("agent.task_output")

# The master sets it for a command without a context directory (controlplane/services/commands).
NO_CONTEXT_ENV = "RESOLUTE_NO_CONTEXT"
STREAMS = ("stdout", "stderr")
# Lines printed within this long of each other go in one batch (one message, one transaction on
# the master); the last lines of a task that ends go at once.
FLUSH_S = 0.05
# Batches sent and not yet stored by the master: beyond this the shipper waits, and beyond
# MAX_PENDING_LINES read lines it stops reading, so a chatty task on an agent whose master is
# away holds memory bounded; the rest stays in the runtime's log until the master is back (the
# engine's log driver rotates, as it does for `docker logs`).
MAX_UNACKED_BATCHES = 4
MAX_PENDING_LINES = 4 * MAX_OUTPUT_BATCH


def runs_directly(environment: Mapping[str, str], argv: Sequence[str]) -> bool:
    """Whether a task runs its command without the harness launcher: the master says it has no
    context directory to download, and there is a command."""
    return environment.get(NO_CONTEXT_ENV) == "1" and bool(argv)


class LineCutter:
    """One stream's bytes → its lines as text, without the newline: invalid UTF-8 replaced (a
    character split across chunks is kept whole), a line longer than ``limit`` characters cut
    into pieces of ``limit``, an unfinished last line held until more comes or ``finish``."""

    def __init__(self, limit: int = MAX_OUTPUT_LINE_CHARS) -> None:
        self.limit = limit
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._partial = ""

    def feed(self, chunk: bytes) -> list[str]:
        *lines, self._partial = (self._partial + self._decoder.decode(chunk)).split("\n")
        out = [piece for line in lines for piece in self._pieces(line)]
        while len(self._partial) > self.limit:
            out.append(self._partial[: self.limit])
            self._partial = self._partial[self.limit :]
        return out

    def finish(self) -> list[str]:
        rest = self._partial + self._decoder.decode(b"", final=True)
        self._partial = ""
        return self._pieces(rest) if rest else []

    def _pieces(self, line: str) -> list[str]:
        if len(line) <= self.limit:
            return [line]
        return [line[i : i + self.limit] for i in range(0, len(line), self.limit)]


class OutputShipper:
    """Reads one container's output and sends it as numbered ``ContainerOutput`` batches through
    ``send``; keeps each batch until the master says it stored it (``stored``), so that
    ``unacked`` can go again after a reconnect. ``run`` returns once every line has been handed
    to ``send``; ``settled`` once the master has stored them all as well."""

    def __init__(
        self,
        container_id: str,
        send: Callable[[ContainerOutput], None],
        clock: Callable[[], float],
        *,
        flush_s: float = FLUSH_S,
        max_unacked: int = MAX_UNACKED_BATCHES,
        max_pending: int = MAX_PENDING_LINES,
    ) -> None:
        self.container_id = container_id
        self._send = send
        self._clock = clock
        self._flush_s = flush_s
        self._max_unacked = max_unacked
        self._max_pending = max_pending
        self._pending: list[OutputLine] = []
        self._unacked: dict[int, ContainerOutput] = {}
        self._seq = 0
        self._ready = asyncio.Event()  # lines are pending, or the output ended
        self._room = asyncio.Event()  # the reader may read on
        self._acked = asyncio.Event()  # the master stored a batch
        self._ended = False
        self._done = False
        self.lines = 0

    @property
    def unacked(self) -> list[ContainerOutput]:
        return list(self._unacked.values())

    def stored(self, seq: int) -> None:
        for done in [s for s in self._unacked if s <= seq]:
            del self._unacked[done]
        self._acked.set()

    async def settled(self) -> None:
        while not (self._done and not self._unacked):
            self._acked.clear()
            await self._acked.wait()

    async def run(self, chunks: AsyncIterator[tuple[str, bytes]]) -> None:
        flusher = asyncio.ensure_future(self._flush())
        try:
            await self._read(chunks)
        except asyncio.CancelledError:
            flusher.cancel()
            raise
        except Exception:
            self._end()
            await flusher  # what was read still goes out, before the caller hears why it ended
            raise
        self._end()
        await flusher

    def _end(self) -> None:
        self._ended = True
        self._ready.set()

    async def _read(self, chunks: AsyncIterator[tuple[str, bytes]]) -> None:
        cutters = {stream: LineCutter() for stream in STREAMS}
        try:
            async for stream, chunk in chunks:
                cutter = cutters.get(stream)
                if cutter is None:
                    continue
                self._add(stream, cutter.feed(chunk))
                while len(self._pending) >= self._max_pending:
                    self._room.clear()
                    await self._room.wait()
        finally:
            for stream, cutter in cutters.items():
                self._add(stream, cutter.finish())

    def _add(self, stream: str, texts: list[str]) -> None:
        if not texts:
            return
        now = self._clock()
        self._pending += [OutputLine(timestamp=now, stream=stream, text=t) for t in texts]
        self._ready.set()

    async def _flush(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            if not self._ended:
                await asyncio.sleep(self._flush_s)  # let the lines printed with these join them
            while self._pending:
                batch = self._pending[:MAX_OUTPUT_BATCH]
                del self._pending[:MAX_OUTPUT_BATCH]
                self._room.set()
                await self._hand_over(batch)
            if self._ended and not self._pending:
                self._done = True
                self._acked.set()
                return

    async def _hand_over(self, batch: list[OutputLine]) -> None:
        while len(self._unacked) >= self._max_unacked:
            self._acked.clear()
            await self._acked.wait()
        self._seq += 1
        message = ContainerOutput(container_id=self.container_id, seq=self._seq, lines=tuple(batch))
        self._unacked[self._seq] = message
        self.lines += len(batch)
        self._send(message)
