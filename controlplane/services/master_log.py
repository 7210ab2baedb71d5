"""The master's own log, kept in memory for `det master logs` (Determined's MasterLogs): the
newest CAPACITY lines of this process, each with an id that only grows, so a follower asks for
what came after the last id it printed."""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

CAPACITY = 10_000
_LEVELS = {
    logging.DEBUG: "LOG_LEVEL_DEBUG",
    logging.INFO: "LOG_LEVEL_INFO",
    logging.WARNING: "LOG_LEVEL_WARNING",
    logging.ERROR: "LOG_LEVEL_ERROR",
    logging.CRITICAL: "LOG_LEVEL_CRITICAL",
}


@dataclass(frozen=True)
class Entry:
    id: int
    timestamp: datetime
    level: str
    message: str


class LogRing(logging.Handler):
    """A logging handler that keeps the last `capacity` records (any thread may log)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        super().__init__()
        self._entries: deque[Entry] = deque(maxlen=capacity)
        self._next = 1
        self._lock_entries = threading.Lock()
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
        except Exception:  # a bad format string must not break the caller's logging
            message = str(record.msg)
        level = _LEVELS.get(record.levelno, "LOG_LEVEL_INFO")
        when = datetime.fromtimestamp(record.created, UTC)
        with self._lock_entries:
            self._entries.append(Entry(self._next, when, level, message))
            self._next += 1

    def read(self, *, offset: int, limit: int, after_id: int = 0) -> list[Entry]:
        """Entries after `after_id`: from `offset` (negative: that many from the end), at most
        `limit` of them (0: all)."""
        with self._lock_entries:
            entries = [e for e in self._entries if e.id > after_id]
        if after_id == 0:
            entries = entries[offset:]  # a negative offset counts from the end: --tail
        return entries[:limit] if limit > 0 else entries

    @property
    def last_id(self) -> int:
        with self._lock_entries:
            return self._next - 1
