"""The Docker engine's log stream: its frames, their timestamps, and the catch-up read that
gives back what a follow dropped.

A followed log (``follow=1``) can end without a stream's last message when that message has no
newline (moby/moby#43860; one container in a few dozen on 20.10 when many start at once). A
read without ``follow`` once the follow has ended is complete, so the runtime reads again and
skips the messages it already has. The dropped message need not be the last of all (seen on
20.10: a stream's unfinished last line dropped, a later one of the other stream delivered), so
each stream is caught up from its own last timestamp; ``since`` keeps messages at that very
timestamp, so a ``Seen`` counts how many it got with it.

Pure: bytes and timestamps in, chunks and request parameters out; docker.py does the I/O.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

FRAME_HEADER = struct.Struct(">BxxxL")
STREAMS = ("stdout", "stderr")


class Readable(Protocol):
    def read(self, n: int) -> bytes: ...


def frames(raw: Readable) -> Iterator[tuple[str, bytes]]:
    """The engine's multiplexed stream (a container without a TTY): frames of an 8-byte header
    (stream: 1 stdout, 2 stderr; 3 zero bytes; a big-endian length) and that many bytes."""
    while True:
        header = raw.read(FRAME_HEADER.size)
        if len(header) < FRAME_HEADER.size:
            return
        kind, length = FRAME_HEADER.unpack(header)
        data = raw.read(length) if length else b""
        if length and not data:
            return
        yield ("stderr" if kind == 2 else "stdout"), data


def split_timestamp(data: bytes) -> tuple[int, bytes]:
    """A frame asked for with ``timestamps=1`` → (its timestamp in Unix nanoseconds, the
    message). The engine writes one frame per message, the timestamp and a space first."""
    stamp, sep, message = data.partition(b" ")
    if not sep:
        raise ValueError(f"a log frame without a timestamp: {data[:40]!r}")
    return stamp_nanos(stamp.decode("ascii", errors="replace")), message


_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)", re.ASCII)


def stamp_nanos(stamp: str) -> int:
    """An RFC 3339 timestamp as the engine writes them (``2026-11-27T10:29:53.065123456Z``;
    an offset where the daemon's zone is not UTC) → Unix nanoseconds, exactly (a float or
    ``datetime`` would round the nanoseconds away)."""
    match = _STAMP.fullmatch(stamp)
    if match is None:
        raise ValueError(f"not a log timestamp: {stamp!r}")
    whole, fraction, zone = match.groups()
    moment = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    offset = 0
    if zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    seconds = int(moment.timestamp()) - offset
    return seconds * 1_000_000_000 + int((fraction or "0").ljust(9, "0"))


def since_param(nanos: int) -> str:
    """Unix nanoseconds → the ``since`` parameter that keeps messages from that instant on."""
    return f"{nanos // 1_000_000_000}.{nanos % 1_000_000_000:09d}"


@dataclass
class Seen:
    """Per stream, the last timestamp a follow delivered and how many messages carried it."""

    last: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, stream: str, stamp: int) -> None:
        before, count = self.last.get(stream, (None, 0))
        self.last[stream] = (stamp, count + 1 if stamp == before else 1)

    def catch_up_requests(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The follow's request turned into the plain reads that catch up: the streams it saw
        from the earliest of their last timestamps; a stream it saw nothing of from where the
        follow started (such a stream holds at most what was dropped: little)."""
        plain = {k: v for k, v in params.items() if k != "follow"}
        seen = [s for s in STREAMS if s in self.last]
        unseen = [s for s in STREAMS if s not in self.last]
        requests = []
        if unseen:
            requests.append({**plain, **{s: int(s in unseen) for s in STREAMS}})
        if seen:
            since = since_param(min(self.last[s][0] for s in seen))
            requests.append({**plain, **{s: int(s in seen) for s in STREAMS}, "since": since})
        return requests

    def missed(self, stamped: Iterable[tuple[str, int, bytes]]) -> Iterator[tuple[str, bytes]]:
        """A catch-up read's (stream, timestamp, message) → those the follow did not deliver: a
        stream's messages after its last timestamp seen, and at that timestamp all but the
        first ``count`` (the engine's ``since`` is inclusive)."""
        skip = {stream: count for stream, (_, count) in self.last.items()}
        for stream, stamp, message in stamped:
            if stream in self.last:
                last, _ = self.last[stream]
                if stamp < last:
                    continue
                if stamp == last and skip[stream] > 0:
                    skip[stream] -= 1
                    continue
            yield stream, message
