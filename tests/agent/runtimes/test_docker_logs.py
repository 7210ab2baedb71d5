"""The engine's log frames and the catch-up read after a follow (agent/runtimes/docker_logs.py)."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.runtimes.docker_logs import (
    FRAME_HEADER,
    Seen,
    frames,
    since_param,
    split_timestamp,
    stamp_nanos,
)


def frame(stream: int, data: bytes) -> bytes:
    return FRAME_HEADER.pack(stream, len(data)) + data


def test_frames_name_their_stream_and_stop_at_a_cut_header_or_body():
    raw = frame(1, b"out\n") + frame(2, b"err") + frame(1, b"") + frame(1, b"cut")[:-3]
    assert list(frames(io.BytesIO(raw))) == [
        ("stdout", b"out\n"),
        ("stderr", b"err"),
        ("stdout", b""),
    ]
    assert list(frames(io.BytesIO(frame(2, b"x")[:5]))) == []


@pytest.mark.parametrize(
    ("stamp", "nanos"),
    [
        ("1970-01-01T00:00:00.000000000Z", 0),
        ("1970-01-01T00:00:01.000000001Z", 1_000_000_001),
        ("2026-11-27T10:29:53.065123456Z", 1_795_775_393_065_123_456),
        ("2026-11-27T11:29:53.065123456+01:00", 1_795_775_393_065_123_456),
        ("2026-11-27T05:59:53.5-04:30", 1_795_775_393_500_000_000),
        ("2026-11-27T10:29:53Z", 1_795_775_393_000_000_000),
    ],
)
def test_engine_timestamps_become_exact_nanoseconds(stamp: str, nanos: int):
    assert stamp_nanos(stamp) == nanos


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "yesterday",
        "2026-11-27T10:29:53.1234567890Z",
        "2026-11-27T10:29:53.065",
        "٢٠٢٦-11-27T10:29:53Z",
    ],
)
def test_anything_else_is_refused(bad: str):
    with pytest.raises(ValueError, match="not a log timestamp"):
        stamp_nanos(bad)


def test_a_frame_without_a_timestamp_is_refused():
    with pytest.raises(ValueError, match="without a timestamp"):
        split_timestamp(b"no-space-here")


def test_the_message_keeps_every_byte_after_the_first_space():
    assert split_timestamp(b"2026-11-27T10:29:53.000000001Z  two spaces\n") == (
        1_795_775_393_000_000_001,
        b" two spaces\n",
    )


@given(st.integers(min_value=0, max_value=4_102_444_800 * 10**9))
def test_since_is_the_same_instant_to_the_nanosecond(nanos: int):
    seconds, _, fraction = since_param(nanos).partition(".")
    assert len(fraction) == 9
    assert int(seconds) * 10**9 + int(fraction) == nanos
    moment = datetime.fromtimestamp(nanos // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    assert stamp_nanos(f"{moment}.{nanos % 10**9:09d}Z") == nanos


FOLLOW = {"follow": 1, "stdout": 1, "stderr": 1, "timestamps": 1}


def test_nothing_seen_is_one_read_of_both_streams_from_where_the_follow_started():
    assert Seen().catch_up_requests({**FOLLOW, "since": "5.000000"}) == [
        {"stdout": 1, "stderr": 1, "timestamps": 1, "since": "5.000000"}
    ]


def test_both_streams_seen_is_one_read_from_the_earlier_of_their_last_timestamps():
    seen = Seen()
    seen.add("stdout", 9_000_000_000)
    seen.add("stderr", 7_000_000_001)
    assert seen.catch_up_requests(FOLLOW) == [
        {"stdout": 1, "stderr": 1, "timestamps": 1, "since": "7.000000001"}
    ]


def test_a_stream_seen_alone_is_read_from_its_last_timestamp_the_other_from_the_start():
    seen = Seen()
    seen.add("stdout", 9_000_000_000)
    assert seen.catch_up_requests(FOLLOW) == [
        {"stdout": 0, "stderr": 1, "timestamps": 1},
        {"stdout": 1, "stderr": 0, "timestamps": 1, "since": "9.000000000"},
    ]


# The engine's log (stream, timestamp, message), in its order.
LOG = [
    ("stdout", 1, b"a\n"),
    ("stderr", 2, b"b\n"),
    ("stdout", 2, b"c\n"),
    ("stdout", 3, b"d"),
    ("stderr", 4, b"e"),
]


@pytest.mark.parametrize(
    ("delivered", "missed"),
    [
        ([0, 1, 2, 3, 4], []),
        ([0, 1, 2, 4], [("stdout", b"d")]),  # seen on 20.10: stdout's unfinished line dropped
        ([0, 1, 2, 3], [("stderr", b"e")]),  # moby#43860: the last message of all
        ([0, 1, 2], [("stdout", b"d"), ("stderr", b"e")]),
        (
            [0, 1],
            [("stdout", b"c\n"), ("stdout", b"d"), ("stderr", b"e")],
        ),  # cut at a shared instant
        ([0], [(s, m) for s, _, m in LOG[1:]]),
        ([], [(s, m) for s, _, m in LOG]),
    ],
)
def test_the_catch_up_gives_exactly_what_the_follow_dropped(delivered: list[int], missed: list):
    seen = Seen()
    for i in delivered:
        seen.add(LOG[i][0], LOG[i][1])
    assert reread(seen, LOG) == missed


def reread(seen: Seen, log: list[tuple[str, int, bytes]]) -> list[tuple[str, bytes]]:
    """What the catch-up requests return from ``log``, as the engine would answer them."""
    out = []
    for request in seen.catch_up_requests(FOLLOW):
        since = stamp_of(request.get("since"))
        answer = [e for e in log if request[e[0]] and e[1] >= since]
        out += list(seen.missed(answer))
    return sorted(out, key=lambda m: next(i for i, e in enumerate(log) if (e[0], e[2]) == m))


def stamp_of(since: str | None) -> int:
    if since is None:
        return 0
    seconds, _, nanos = since.partition(".")
    return int(seconds) * 10**9 + int(nanos)


@given(
    st.lists(
        st.tuples(st.sampled_from(["stdout", "stderr"]), st.integers(0, 5), st.booleans()),
        max_size=30,
    ),
)
def test_follow_then_catch_up_is_the_whole_log_once(entries: list[tuple[str, int, bool]]):
    """Any log, any subset the follow delivered (each stream's messages up to a point, as a
    stream is read in order, plus the other stream's in any number): nothing lost, nothing twice."""
    log = [
        (s, t, str(i).encode()) for i, (s, t, _) in enumerate(sorted(entries, key=lambda e: e[1]))
    ]
    cut = {
        s: sum(1 for (st_, _, keep) in entries if st_ == s and keep) for s in ("stdout", "stderr")
    }
    seen = Seen()
    delivered = []
    for stream in ("stdout", "stderr"):
        for entry in [e for e in log if e[0] == stream][: cut[stream]]:
            seen.add(entry[0], entry[1])
            delivered.append((entry[0], entry[2]))
    assert sorted(delivered + reread(seen, log)) == sorted((s, m) for s, _, m in log)
    assert len(delivered + reread(seen, log)) == len(log)
