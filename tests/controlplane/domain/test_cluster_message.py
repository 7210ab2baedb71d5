"""Cluster messages: Determined's rules on end time and duration, ours on text and times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import cluster_message as rules
from controlplane.domain.errors import InvalidArgument

NOW = datetime(2026, 12, 7, 12, tzinfo=UTC)
H = timedelta(hours=1)


@pytest.mark.parametrize(
    ("start", "end", "duration", "want_end"),
    [
        (NOW, None, None, None),
        (NOW, NOW + H, None, NOW + H),
        (NOW - H, None, "2h", NOW + H),
        (NOW + H, None, "30m", NOW + H + timedelta(minutes=30)),
    ],
)
def test_valid_windows(
    start: datetime, end: datetime | None, duration: str | None, want_end: datetime | None
) -> None:
    window = rules.plan("maintenance at 18:00", start, end, duration, NOW)
    assert (window.start, window.end) == (start, want_end)


@pytest.mark.parametrize(
    ("message", "start", "end", "duration", "why"),
    [
        ("m", NOW, NOW + H, "1h", "mutually exclusive"),
        ("   ", NOW, None, None, "empty"),
        ("x" * 251, NOW, None, None, "at most 250"),
        ("a\x00b", NOW, None, None, "without NUL"),
        ("m", NOW, None, "-1h", "positive value"),
        ("m", NOW, None, "soon", "positive value"),
        ("m", NOW, NOW - H, None, "after the start"),
        ("m", NOW - 2 * H, NOW - H, None, "already past"),
    ],
)
def test_invalid_windows(
    message: str, start: datetime, end: datetime | None, duration: str | None, why: str
) -> None:
    with pytest.raises(InvalidArgument, match=why):
        rules.plan(message, start, end, duration, NOW)


@given(
    st.timedeltas(min_value=-10 * H, max_value=10 * H),
    st.one_of(st.none(), st.timedeltas(min_value=timedelta(seconds=1), max_value=10 * H)),
    st.timedeltas(min_value=-20 * H, max_value=20 * H),
)
def test_showing_means_started_and_not_ended(
    start_at: timedelta, length: timedelta | None, when: timedelta
) -> None:
    start = NOW + start_at
    window = rules.Window("m", start, None if length is None else start + length)
    at = NOW + when
    showing = rules.is_showing(window, at)
    assert showing == (start <= at and (window.end is None or at < window.end))
    assert not showing or rules.is_current(window, at)
