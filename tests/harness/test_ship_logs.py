"""The log shipper's pure parts (lines, prefixes, batches) and its thread over a fake transport."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness._session import APIError, MasterUnreachable
from harness.exec.ship_logs import (
    LineSplitter,
    LogMetadata,
    LogShipper,
    ParsedLine,
    ShipperSettings,
    StreamParser,
    make_entry,
    parse_line,
    take_batch,
)
from tests.harness.fakes import FakeTransport

META = LogMetadata(task_id="t", allocation_id="t.1", agent_id="a", container_id="t.1-0")


class TestParseLine:
    @pytest.mark.parametrize(
        ("line", "parsed"),
        [
            ("hello\n", ParsedLine("hello\n")),
            ("[rank=3] hello\n", ParsedLine("hello\n", rank_id=3)),
            (" [rank=12] x", ParsedLine("x", rank_id=12)),
            ("INFO: started\n", ParsedLine("started\n", level="INFO")),
            ("WARNING:root:careful", ParsedLine("root:careful", level="WARNING")),
            ("[rank=1] ERROR: boom", ParsedLine("boom", rank_id=1, level="ERROR")),
            ("CRITICAL:x", ParsedLine("x", level="CRITICAL")),
            ("DEBUG: d", ParsedLine("d", level="DEBUG")),
            # Only prefixes count, and only in this order.
            ("note [rank=2] x", ParsedLine("note [rank=2] x")),
            ("ERROR: [rank=2] x", ParsedLine("[rank=2] x", level="ERROR")),
            ("info: lower case", ParsedLine("info: lower case")),
            ("[rank=x] y", ParsedLine("[rank=x] y")),
            ("TRACE: unknown level", ParsedLine("TRACE: unknown level")),
        ],
    )
    def test_prefixes(self, line: str, parsed: ParsedLine) -> None:
        assert parse_line(line) == parsed


def _split(data: bytes, chunk: int, limit: int) -> list[tuple[bytes, bool]]:
    splitter = LineSplitter(limit=limit)
    out: list[tuple[bytes, bool]] = []
    for i in range(0, len(data), chunk):
        out.extend(splitter.feed(data[i : i + chunk]))
    out.extend(splitter.finish())
    return out


class TestLineSplitter:
    def test_lines_keep_their_newlines(self) -> None:
        assert _split(b"a\nbb\n\nccc", 2, 100) == [
            (b"a\n", False),
            (b"bb\n", False),
            (b"\n", False),
            (b"ccc", False),
        ]

    def test_long_line_is_cut_and_marked_continued(self) -> None:
        pieces = _split(b"x" * 25 + b"\nend\n", 7, 10)
        assert pieces == [
            (b"x" * 10, False),
            (b"x" * 10, True),
            (b"x" * 5 + b"\n", True),
            (b"end\n", False),
        ]

    def test_cut_never_splits_a_character(self) -> None:
        text = ("é" * 10 + "\n").encode()  # 2 bytes per character
        pieces = _split(text, 3, 5)
        assert all(p.decode("utf-8") for p, _ in pieces)
        assert b"".join(p for p, _ in pieces) == text

    @given(
        st.binary(max_size=3000) | st.text(max_size=800).map(str.encode),
        st.integers(1, 300),
        st.integers(4, 64),
    )
    def test_invariants(self, data: bytes, chunk: int, limit: int) -> None:
        pieces = _split(data, chunk, limit)
        assert b"".join(p for p, _ in pieces) == data
        for i, (piece, continued) in enumerate(pieces):
            body = piece[:-1] if piece.endswith(b"\n") else piece
            assert len(body) <= limit
            assert b"\n" not in body
            assert piece  # no empty pieces
            previous_open = i > 0 and not pieces[i - 1][0].endswith(b"\n")
            assert continued == previous_open

    @given(st.text(max_size=600), st.integers(1, 50), st.integers(4, 40))
    def test_valid_utf8_stays_valid_per_piece(self, text: str, chunk: int, limit: int) -> None:
        for piece, _ in _split(text.encode(), chunk, limit):
            piece.decode("utf-8")


class TestEntries:
    def test_stream_parser_entry(self) -> None:
        parser = StreamParser(META, "stderr")
        entry = parser.entry(b"[rank=2] WARNING: hot\n", False, 0.0)
        assert entry == {
            "task_id": "t",
            "allocation_id": "t.1",
            "agent_id": "a",
            "container_id": "t.1-0",
            "rank_id": 2,
            "timestamp": "1970-01-01T00:00:00Z",
            "log": "hot\n",
            "stdtype": "stderr",
            "source": "task",
            "level": "LOG_LEVEL_WARNING",
        }

    def test_binary_is_replaced_and_continuations_keep_metadata(self) -> None:
        parser = StreamParser(META, "stdout")
        first = parser.entry(b"[rank=1] ERROR: \xff\xfe", False, 0.0)
        rest = parser.entry(b"[rank=9] tail\n", True, 0.0)
        assert first["log"] == "\ufffd\ufffd" and first["level"] == "LOG_LEVEL_ERROR"
        assert rest["log"] == "[rank=9] tail\n"
        assert rest["rank_id"] == 1 and rest["level"] == "LOG_LEVEL_ERROR"

    def test_default_level_and_no_empty_fields(self) -> None:
        entry = make_entry(LogMetadata(task_id="t"), "x", "stdout", 0.0)
        assert entry["level"] == "LOG_LEVEL_INFO"
        assert "rank_id" not in entry and "agent_id" not in entry


class TestTakeBatch:
    @given(st.lists(st.integers(0, 300), max_size=50), st.integers(1, 10), st.integers(1, 2000))
    def test_bounds(self, sizes: list[int], max_lines: int, max_bytes: int) -> None:
        queue = deque(make_entry(META, "x" * n, "stdout", 0.0) for n in sizes)
        before = list(queue)
        batch = take_batch(queue, max_lines, max_bytes)
        assert batch + list(queue) == before  # oldest first, nothing lost
        if before:
            assert 1 <= len(batch) <= max_lines
            if len(batch) > 1:
                assert sum(len(e["log"]) + 256 for e in batch) <= max_bytes


def _entries(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [make_entry(META, f"line {i}\n", "stdout", 0.0) for i in range(start, start + n)]


def _shipped_logs(fake: FakeTransport) -> list[str]:
    return [e["log"] for c in fake.to("/task/logs") for e in c.body["logs"]]


class TestLogShipper:
    def test_batches_of_at_most_batch_lines(self) -> None:
        fake = FakeTransport()
        shipper = LogShipper(fake, META, ShipperSettings(batch_lines=10, flush_interval_s=5))
        shipper.ship(_entries(25))
        shipper.start()
        assert shipper.close(5)
        sizes = [len(c.body["logs"]) for c in fake.calls]
        assert sizes == [10, 10, 5]
        assert _shipped_logs(fake) == [f"line {i}\n" for i in range(25)]

    def test_flushes_after_the_interval(self) -> None:
        fake = FakeTransport()
        shipper = LogShipper(fake, META, ShipperSettings(flush_interval_s=0.1)).start()
        shipper.ship(_entries(3))
        deadline = time.monotonic() + 5
        while not fake.calls and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [len(c.body["logs"]) for c in fake.calls] == [3]
        assert shipper.close(5)

    def test_retries_while_the_master_is_away(self) -> None:
        failures = iter([MasterUnreachable("down")] * 3)
        sleeps: list[float] = []

        def handler(*_: Any) -> Any:
            exc = next(failures, None)
            if exc is not None:
                raise exc
            return {}

        fake = FakeTransport(handler)
        shipper = LogShipper(
            fake, META, ShipperSettings(backoff_s=(0, 1, 5, 10)), sleep=sleeps.append
        )
        shipper.ship(_entries(2))
        shipper.start()
        assert shipper.close(5)
        assert sleeps == [0, 1, 5]
        assert len(fake.calls) == 4  # three failed attempts, then the same batch again
        assert [e["log"] for e in fake.calls[-1].body["logs"]] == ["line 0\n", "line 1\n"]

    def test_gives_up_on_a_batch_after_the_backoff(self) -> None:
        notices: list[str] = []

        def handler(*_: Any) -> Any:
            raise MasterUnreachable("down")

        fake = FakeTransport(handler)
        shipper = LogShipper(
            fake,
            META,
            ShipperSettings(backoff_s=(0, 0)),
            sleep=lambda _: None,
            notice=notices.append,
        )
        shipper.ship(_entries(2))
        shipper.start()
        shipper.close(5)
        assert len(fake.calls) == 3 and shipper.lost == 2
        assert any("gave up" in n for n in notices)

    def test_refused_batch_is_dropped_and_shipping_goes_on(self) -> None:
        answers = iter([APIError("POST", "/x", 400, "bad"), {}])

        def handler(*_: Any) -> Any:
            answer = next(answers)
            if isinstance(answer, Exception):
                raise answer
            return answer

        fake = FakeTransport(handler)
        shipper = LogShipper(fake, META, ShipperSettings(batch_lines=1), notice=lambda _: None)
        shipper.ship(_entries(2))
        shipper.start()
        assert not shipper.close(5)
        assert shipper.lost == 1 and shipper.shipped == 1

    def test_revoked_token_stops_shipping(self) -> None:
        def handler(*_: Any) -> Any:
            raise APIError("POST", "/x", 401, "invalid or expired allocation token")

        fake = FakeTransport(handler)
        shipper = LogShipper(fake, META, ShipperSettings(batch_lines=1), notice=lambda _: None)
        shipper.ship(_entries(3))
        shipper.start()
        assert not shipper.close(5)
        assert len(fake.calls) == 1 and shipper.lost == 3
        shipper.ship(_entries(1))  # ignored after stop
        assert len(fake.calls) == 1

    def test_full_queue_drops_oldest_and_says_so(self) -> None:
        gate = threading.Event()

        def handler(*_: Any) -> Any:
            gate.wait(5)
            return {}

        fake = FakeTransport(handler)
        settings = ShipperSettings(batch_lines=2, queue_lines=5, flush_interval_s=0)
        shipper = LogShipper(fake, META, settings).start()
        shipper.ship(_entries(2))  # taken by the first (blocked) request
        deadline = time.monotonic() + 5
        while not fake.calls and time.monotonic() < deadline:
            time.sleep(0.01)
        shipper.ship(_entries(8, start=2))  # 8 queued, 5 fit: lines 2-4 dropped
        gate.set()
        assert not shipper.close(5)  # three lines were lost
        logs = _shipped_logs(fake)
        assert logs[:2] == ["line 0\n", "line 1\n"]
        assert "3 earlier log lines were dropped" in logs[2]
        assert logs[3:] == [f"line {i}\n" for i in range(5, 10)]
        assert shipper.lost == 3

    def test_a_crash_is_recorded(self) -> None:
        def handler(*_: Any) -> Any:
            raise RuntimeError("bug")

        shipper = LogShipper(FakeTransport(handler), META, notice=lambda _: None)
        shipper.ship(_entries(1))
        shipper.start()
        assert not shipper.close(5)
        assert isinstance(shipper.crashed, RuntimeError)
