"""The master's in-memory log: ids only grow, the oldest go past the capacity, offsets count
from either end, a follower reads only what came after its last id."""

from __future__ import annotations

import logging

import pytest

from controlplane.services.master_log import LogRing


@pytest.fixture
def ring() -> LogRing:
    ring = LogRing(capacity=5)
    log = logging.getLogger("test.master_log")
    log.setLevel(logging.DEBUG)
    log.addHandler(ring)
    yield ring
    log.removeHandler(ring)


def test_reads(ring: LogRing) -> None:
    log = logging.getLogger("test.master_log")
    for i in range(8):
        log.warning("line %d", i)
    entries = ring.read(offset=0, limit=0)
    assert [e.message for e in entries] == [f"test.master_log: line {i}" for i in range(3, 8)]
    assert [e.id for e in entries] == [4, 5, 6, 7, 8] and ring.last_id == 8
    assert entries[0].level == "LOG_LEVEL_WARNING"
    assert [e.id for e in ring.read(offset=-2, limit=0)] == [7, 8]
    assert [e.id for e in ring.read(offset=1, limit=2)] == [5, 6]
    assert [e.id for e in ring.read(offset=0, limit=0, after_id=6)] == [7, 8]
    # a broken format string still leaves its text in the ring
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "bad %s %s", ("args",), None)
    ring.emit(record)
    assert ring.read(offset=-1, limit=0)[0].message == "bad %s %s"
