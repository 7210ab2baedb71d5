"""Ship a task's output lines to the master: POST /api/v1/task/logs in batches.

Pure parts first (splitting a byte stream into safe lines, reading Determined's ``[rank=N]``
and ``LEVEL:`` prefixes), then the shipper thread. The shipper never blocks the task: its
queue is bounded and drops the oldest lines when the master has been unreachable for long,
and says so in the log once it can ship again.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections import deque, namedtuple
from collections.abc import Callable, Iterable
from datetime import datetime, timezone

# typing is only for annotations (strings here): the launcher, which every task runs,
# would pay for importing it.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from harness._session import Transport

LOGS_PATH = "/api/v1/task/logs"
MAX_LINE_BYTES = 64 * 1024
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# Determined's shipper backs off 0, 1, 5, 10, 15 (x7), 60 (x9) seconds: about 10 minutes.
BACKOFF_S: tuple[float, ...] = (0, 1, 5, 10, *(15,) * 7, *(60,) * 9)

_RANK = re.compile(r" ?\[rank=([0-9]+)\] ?")
_LEVEL = re.compile(r" ?(DEBUG|INFO|WARNING|ERROR|CRITICAL): ?")


# Records here are named tuples and plain classes, not dataclasses: every task's launcher imports
# this module, and `dataclasses` (with `inspect`, which it imports) was a fifth of its start-up.


class ParsedLine(namedtuple("ParsedLine", "text rank_id level", defaults=(None, None))):
    """``text`` (str), ``rank_id`` (int | None), ``level`` (str | None)."""

    __slots__ = ()


def parse_line(text: str) -> ParsedLine:
    """Strip a leading ``[rank=N]`` then a leading ``LEVEL:`` prefix, as Determined does."""
    rank_id = None
    level = None
    m = _RANK.match(text)
    if m:
        rank_id = int(m.group(1))
        text = text[m.end() :]
    m = _LEVEL.match(text)
    if m:
        level = m.group(1)
        text = text[m.end() :]
    return ParsedLine(text=text, rank_id=rank_id, level=level)


def _cut(buf: bytes | bytearray, limit: int) -> int:
    """Where to split ``buf`` at or below ``limit`` without breaking a UTF-8 sequence."""
    cut = limit
    for back in range(4):
        i = limit - back
        if i <= 0:
            break
        if (buf[i] & 0xC0) != 0x80:  # not a continuation byte: a character starts here
            return i
    return cut


class LineSplitter:
    """Turns chunks of a byte stream into lines of at most ``limit`` bytes (plus the newline).

    Each piece comes with ``continued``: True when it carries on a line whose earlier bytes
    were already emitted (a line longer than the limit). Complete lines keep their newline.
    """

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._continuing = False

    def feed(self, chunk: bytes) -> list[tuple[bytes, bool]]:
        self._buf.extend(chunk)
        out: list[tuple[bytes, bool]] = []
        while True:
            nl = self._buf.find(b"\n", 0, self.limit + 1)
            if nl != -1:
                piece = bytes(self._buf[: nl + 1])
                del self._buf[: nl + 1]
                out.append((piece, self._continuing))
                self._continuing = False
                continue
            if len(self._buf) > self.limit:
                cut = _cut(self._buf, self.limit)
                out.append((bytes(self._buf[:cut]), self._continuing))
                del self._buf[:cut]
                self._continuing = True
                continue
            return out

    def finish(self) -> list[tuple[bytes, bool]]:
        if not self._buf:
            return []
        piece = bytes(self._buf)
        self._buf.clear()
        continued, self._continuing = self._continuing, False
        return [(piece, continued)]


class LogMetadata(
    namedtuple(
        "LogMetadata",
        "task_id allocation_id agent_id container_id rank_id",
        defaults=(None, None, None, None),
    )
):
    """What every shipped line of this container carries: ``task_id`` (str), then
    ``allocation_id``, ``agent_id``, ``container_id`` (str | None) and ``rank_id`` (int | None)."""

    __slots__ = ()


def timestamp(now: float) -> str:
    return datetime.fromtimestamp(now, timezone.utc).isoformat().replace("+00:00", "Z")  # noqa: UP017


class StreamParser:
    """Makes log entries of one stream's pieces; a continued piece keeps its line's metadata."""

    def __init__(self, meta: LogMetadata, stdtype: str) -> None:
        self.meta = meta
        self.stdtype = stdtype
        self._last = ParsedLine("")

    def entry(self, piece: bytes, continued: bool, now: float) -> dict[str, Any]:
        text = piece.decode("utf-8", "replace")
        if continued:
            parsed = ParsedLine(text, self._last.rank_id, self._last.level)
        else:
            parsed = parse_line(text)
            self._last = parsed
        rank = parsed.rank_id if parsed.rank_id is not None else self.meta.rank_id
        return make_entry(self.meta, parsed.text, self.stdtype, now, parsed.level, rank)


def make_entry(
    meta: LogMetadata,
    text: str,
    stdtype: str,
    now: float,
    level: str | None = None,
    rank_id: int | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "task_id": meta.task_id,
        "timestamp": timestamp(now),
        "log": text,
        "stdtype": stdtype,
        "source": "task",
        "level": f"LOG_LEVEL_{level or 'INFO'}",
    }
    for key, value in (
        ("allocation_id", meta.allocation_id),
        ("agent_id", meta.agent_id),
        ("container_id", meta.container_id),
        ("rank_id", rank_id),
    ):
        if value is not None and value != "":
            entry[key] = value
    return entry


def entry_size(entry: dict[str, Any]) -> int:
    return len(entry["log"]) + 256


def take_batch(
    queue: deque[dict[str, Any]], max_lines: int, max_bytes: int
) -> list[dict[str, Any]]:
    """Pop the oldest entries, at least one, within both bounds."""
    batch: list[dict[str, Any]] = []
    size = 0
    while queue and len(batch) < max_lines:
        nxt = entry_size(queue[0])
        if batch and size + nxt > max_bytes:
            break
        batch.append(queue.popleft())
        size += nxt
    return batch


class ShipperSettings(
    namedtuple(
        "ShipperSettings",
        "flush_interval_s batch_lines batch_bytes queue_lines queue_bytes backoff_s "
        "request_timeout_s",
        defaults=(1.0, 1000, 4 * 1024 * 1024, 3000, 32 * 1024 * 1024, BACKOFF_S, 30.0),
    )
):
    """Seconds, lines and bytes; ``backoff_s`` is a sequence of pauses (s) between tries."""

    __slots__ = ()


class LogShipper:
    """A daemon thread that posts queued entries; ``ship`` never blocks on the network.

    ``crashed`` holds the exception if the thread died of a bug (the launcher then exits 80).
    A batch the master refuses (4xx) is dropped with a notice; a batch that cannot be delivered
    after the whole backoff is dropped too; a 401 (the allocation ended) stops shipping.
    """

    def __init__(
        self,
        transport: Transport,
        meta: LogMetadata,
        settings: ShipperSettings = ShipperSettings(),
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        self.transport = transport
        self.meta = meta
        self.settings = settings
        self._clock = clock
        self._wall = wall
        self._sleep = sleep
        self._notice = notice or (lambda text: print(text, file=sys.stderr, flush=True))
        self._queue: deque[dict[str, Any]] = deque()
        self._queued_bytes = 0
        self._oldest_at: float | None = None
        self._dropped = 0
        self._closing = False
        self._stopped = False
        self._busy = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="log-shipper", daemon=True)
        self.crashed: BaseException | None = None
        self.shipped = 0
        self.lost = 0

    def start(self) -> LogShipper:
        self._thread.start()
        return self

    def ship(self, entries: Iterable[dict[str, Any]]) -> None:
        s = self.settings
        with self._cond:
            if self._stopped:
                return
            for entry in entries:
                self._queue.append(entry)
                self._queued_bytes += entry_size(entry)
                if self._oldest_at is None:
                    self._oldest_at = self._clock()
            while len(self._queue) > s.queue_lines or (
                self._queued_bytes > s.queue_bytes and len(self._queue) > 1
            ):
                self._queued_bytes -= entry_size(self._queue.popleft())
                self._dropped += 1
            self._cond.notify_all()

    def close(self, timeout: float) -> bool:
        """Flush what is queued, waiting at most ``timeout`` s; True when every line went out."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)
        with self._cond:
            drained = not self._queue and not self._busy
            self._stopped = True
            self._cond.notify_all()
        return drained and self.crashed is None and self.lost == 0

    def _ready(self) -> bool:
        if self._stopped or (self._closing and not self._queue):
            return True
        if not self._queue:
            return False
        if self._closing or len(self._queue) >= self.settings.batch_lines:
            return True
        assert self._oldest_at is not None
        return self._clock() - self._oldest_at >= self.settings.flush_interval_s

    def _next_batch(self) -> list[dict[str, Any]] | None:
        s = self.settings
        with self._cond:
            while not self._ready():
                wait = s.flush_interval_s
                if self._oldest_at is not None:
                    wait = max(0.0, self._oldest_at + s.flush_interval_s - self._clock())
                self._cond.wait(timeout=max(wait, 0.01))
            if self._stopped or not self._queue:
                return None
            batch = take_batch(self._queue, s.batch_lines, s.batch_bytes)
            self._queued_bytes -= sum(entry_size(e) for e in batch)
            self._oldest_at = self._clock() if self._queue else None
            if self._dropped:
                text = (
                    f"[log shipper] {self._dropped} earlier log lines were dropped while the "
                    "master could not take them\n"
                )
                batch.insert(0, make_entry(self.meta, text, "stderr", self._wall(), "WARNING"))
                self.lost += self._dropped
                self._dropped = 0
            self._busy = True
            return batch

    def _run(self) -> None:
        try:
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                try:
                    if not self._send(batch):
                        return
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
        except BaseException as exc:  # a bug in the shipper: the launcher reports exit 80
            self.crashed = exc
            self._notice(f"[log shipper] crashed: {exc!r}")

    def _send(self, batch: list[dict[str, Any]]) -> bool:
        """Deliver one batch; False when shipping must stop altogether."""
        # Here, not at the top: a task that prints nothing never pays for the HTTP stack's
        # imports (http.client, email, ssl: a third of the launcher's start-up).
        from harness._session import NO_RETRY, APIError, MasterUnreachable

        for pause in (*self.settings.backoff_s, None):
            try:
                self.transport.request(
                    "POST",
                    LOGS_PATH,
                    body={"logs": batch},
                    timeout=self.settings.request_timeout_s,
                    retry=NO_RETRY,
                )
                self.shipped += len(batch)
                return True
            except APIError as exc:
                if exc.status in (401, 403):
                    self._notice(f"[log shipper] the master refused this task's token: {exc}")
                    with self._cond:
                        self._stopped = True
                        self.lost += len(batch) + len(self._queue)
                        self._queue.clear()
                    return False
                self._notice(f"[log shipper] dropped {len(batch)} lines the master refused: {exc}")
                self.lost += len(batch)
                return True
            except MasterUnreachable:
                if pause is None or self._stopped:
                    break
                self._sleep(pause)
        self._notice(f"[log shipper] gave up on {len(batch)} lines: the master is unreachable")
        self.lost += len(batch)
        return True
