"""The agent's side of a direct task's output: which tasks run directly, the line cutter, and the
shipper's batches, acknowledgements and limits (agent/task_output.py)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.protocol import MAX_OUTPUT_BATCH, ContainerOutput
from agent.task_output import NO_CONTEXT_ENV, LineCutter, OutputShipper, runs_directly


@pytest.mark.parametrize(
    ("environment", "argv", "direct"),
    [
        ({NO_CONTEXT_ENV: "1"}, ["true"], True),
        ({NO_CONTEXT_ENV: "1"}, [], False),
        ({}, ["true"], False),  # a context directory to download: the launcher does it
        ({NO_CONTEXT_ENV: "0"}, ["true"], False),
        ({NO_CONTEXT_ENV: "yes"}, ["true"], False),
    ],
)
def test_which_tasks_run_directly(environment: dict[str, str], argv: list[str], direct: bool):
    assert runs_directly(environment, argv) is direct


def cut_all(chunks: list[bytes], limit: int) -> list[str]:
    cutter = LineCutter(limit)
    out = [line for chunk in chunks for line in cutter.feed(chunk)]
    return out + cutter.finish()


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@given(
    data=st.binary(max_size=300) | st.text(max_size=100).map(str.encode),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=10),
    limit=st.integers(min_value=1, max_value=40),
)
def test_cutting_loses_nothing_and_keeps_lines_short(data: bytes, cuts: list[int], limit: int):
    """However the stream is chunked, the lines are those of the whole stream decoded at once
    (a character split across chunks stays whole), each at most `limit` characters."""
    got = cut_all(split_at(data, cuts), limit)
    whole = data.decode("utf-8", "replace")
    expected_lines = whole.split("\n")
    if expected_lines[-1] == "":
        expected_lines.pop()  # the stream ended with a newline: no empty last line
    assert "".join(got) == "".join(expected_lines)
    assert all(len(line) <= limit for line in got)
    assert len(got) >= len(expected_lines)


@pytest.mark.parametrize(
    ("chunks", "limit", "lines"),
    [
        ([b"a\nb\n"], 100, ["a", "b"]),
        ([b"a", b"b\n", b"c"], 100, ["ab", "c"]),  # the unfinished last line comes at the end
        ([b"\n\n"], 100, ["", ""]),  # empty lines are lines
        ([b"caf\xc3", b"\xa9\n"], 100, ["caf\u00e9"]),  # a character split across chunks
        ([b"bad \xff\n"], 100, ["bad \ufffd"]),
        ([b"abcdefgh\n"], 3, ["abc", "def", "gh"]),  # longer than the limit: cut
        ([b"abcd"], 3, ["abc", "d"]),  # cut while still unfinished
    ],
)
def test_cutting_examples(chunks: list[bytes], limit: int, lines: list[str]):
    assert cut_all(chunks, limit) == lines


async def chunks_of(items: list[tuple[str, bytes]], gate: asyncio.Event | None = None):
    for item in items:
        yield item
    if gate is not None:
        await gate.wait()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1
        return self.now


async def test_the_shipper_sends_every_line_in_order_with_its_stream():
    sent: list[ContainerOutput] = []
    shipper = OutputShipper("c-0", sent.append, Clock(), flush_s=0)
    items = [("stdout", b"one\ntw"), ("stderr", b"err\n"), ("stdout", b"o\n"), ("stdout", b"end")]
    await shipper.run(chunks_of(items))
    lines = [(line.stream, line.text) for m in sent for line in m.lines]
    assert lines == [("stdout", "one"), ("stderr", "err"), ("stdout", "two"), ("stdout", "end")]
    assert [m.seq for m in sent] == list(range(1, len(sent) + 1))
    assert all(m.container_id == "c-0" for m in sent)
    times = [line.timestamp for m in sent for line in m.lines]
    assert times == sorted(times)


async def test_lines_printed_together_go_in_one_batch():
    sent: list[ContainerOutput] = []
    shipper = OutputShipper("c-0", sent.append, Clock(), flush_s=0.05)
    gate = asyncio.Event()
    task = asyncio.ensure_future(shipper.run(chunks_of([("stdout", b"a\nb\nc\n")] * 3, gate)))
    while not sent:
        await asyncio.sleep(0.01)
    assert len(sent) == 1 and len(sent[0].lines) == 9
    gate.set()
    await task


async def test_a_big_burst_is_cut_into_full_batches():
    sent: list[ContainerOutput] = []
    shipper = OutputShipper("c-0", sent.append, Clock(), flush_s=0, max_unacked=100)
    n = MAX_OUTPUT_BATCH * 2 + 5
    await shipper.run(chunks_of([("stdout", b"x\n" * n)]))
    assert [len(m.lines) for m in sent] == [MAX_OUTPUT_BATCH, MAX_OUTPUT_BATCH, 5]


async def test_batches_wait_for_the_master_beyond_the_unacked_limit():
    """With two batches unconfirmed, the third waits; confirming the first lets it go; settled
    waits for every confirmation."""
    sent: list[ContainerOutput] = []
    shipper = OutputShipper("c-0", sent.append, Clock(), flush_s=0, max_unacked=2)
    step = asyncio.Event()

    async def three_batches() -> AsyncIterator[tuple[str, bytes]]:
        for text in (b"1\n", b"2\n", b"3\n"):
            yield "stdout", text
            step.clear()
            await step.wait()  # each line its own batch

    reader = asyncio.ensure_future(shipper.run(three_batches()))
    for expected in (1, 2):
        while len(sent) < expected:
            await asyncio.sleep(0.005)
        step.set()
    await asyncio.sleep(0.05)
    step.set()
    await asyncio.sleep(0.05)
    assert len(sent) == 2, "a third batch went out with two unconfirmed"
    assert [m.seq for m in shipper.unacked] == [1, 2]
    shipper.stored(1)
    while len(sent) < 3:
        await asyncio.sleep(0.005)
    await reader
    settled = asyncio.ensure_future(shipper.settled())
    await asyncio.sleep(0.02)
    assert not settled.done()
    shipper.stored(3)  # confirms everything up to 3
    await asyncio.wait_for(settled, 1)
    assert shipper.unacked == []


async def test_what_was_read_still_goes_out_when_the_output_breaks():
    sent: list[ContainerOutput] = []
    shipper = OutputShipper("c-0", sent.append, Clock(), flush_s=10)

    async def broken() -> AsyncIterator[tuple[str, bytes]]:
        yield "stdout", b"kept\nunfinished"
        raise KeyError("gone")

    with pytest.raises(KeyError):
        await asyncio.wait_for(shipper.run(broken()), 2)
    assert [line.text for m in sent for line in m.lines] == ["kept", "unfinished"]


async def test_a_task_that_prints_nothing_sends_nothing():
    sent: list[ContainerOutput] = []
    shipper = OutputShipper("c-0", sent.append, Clock())
    await shipper.run(chunks_of([]))
    await asyncio.wait_for(shipper.settled(), 1)
    assert sent == []


async def test_the_reader_stops_reading_while_too_many_lines_wait():
    sent: list[ContainerOutput] = []
    shipper = OutputShipper("c-0", sent.append, Clock(), flush_s=0, max_unacked=1, max_pending=3)
    read = 0

    async def endless() -> AsyncIterator[tuple[str, bytes]]:
        nonlocal read
        while True:
            read += 1
            yield "stdout", b"line\n"

    task = asyncio.ensure_future(shipper.run(endless()))
    await asyncio.sleep(0.1)
    assert len(sent) == 1  # the master confirmed nothing
    stopped_at = read
    await asyncio.sleep(0.1)
    assert read == stopped_at, "the reader went on reading"
    # What it holds: the unconfirmed batch, one batch waiting to go, max_pending lines.
    assert read <= len(sent[0].lines) + MAX_OUTPUT_BATCH + 3 + 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
