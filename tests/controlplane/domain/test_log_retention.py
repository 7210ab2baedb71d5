"""Log retention: the cutoff of the master's policy, a task's own days, and the whole days a
trial's logs have left (what the web UI's trial page shows)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import log_retention as rules

NOW = datetime(2026, 12, 7, 12, tzinfo=UTC)
D = timedelta(days=1)


@pytest.mark.parametrize(
    ("task", "master", "days"),
    [
        (None, None, None),
        (None, 30, 30),
        (5, 30, 5),
        (-1, 30, None),
        (0, None, 0),
        (None, -1, None),
    ],
)
def test_effective_days(task: int | None, master: int | None, days: int | None) -> None:
    assert rules.effective_days(task, master) == days


@pytest.mark.parametrize(
    ("end", "task", "master", "left"),
    [
        (None, None, None, -1),  # kept forever
        (None, None, 30, 30),  # running: the whole count
        (NOW - 10 * D, None, 30, 20),
        (NOW - 10 * D - timedelta(hours=1), None, 30, 20),  # 19 days 23 h: 20 started days
        (NOW - 31 * D, None, 30, 0),
        (NOW - 31 * D, -1, 30, -1),
        (NOW - 2 * D, 1, None, 0),
    ],
)
def test_remaining_days(
    end: datetime | None, task: int | None, master: int | None, left: int
) -> None:
    assert rules.remaining_days(end, NOW, task, master) == left


@pytest.mark.parametrize("days", [-2, 32768, 10**9])
def test_days_out_of_range(days: int) -> None:
    with pytest.raises(ValueError):
        rules.check_days(days)


@given(st.integers(0, 400), st.timedeltas(min_value=timedelta(0), max_value=500 * D))
def test_remaining_days_count_down_to_zero_as_the_cutoff_passes(keep: int, ago: timedelta) -> None:
    left = rules.remaining_days(NOW - ago, NOW, keep, None)
    cutoff = rules.log_retention_cutoff(NOW, keep)
    assert cutoff is not None
    assert (left == 0) == (NOW - ago <= cutoff)
    assert 0 <= left <= keep
