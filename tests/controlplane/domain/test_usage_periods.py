"""Historical usage per day and month (Determined's aggregated shape): the periods asked for,
the argument checks, and slot-seconds and cost split at midnight by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.cost import AllocationUse, InstanceLife, shares_of, sum_shares
from controlplane.domain.usage_periods import (
    DAILY,
    MONTHLY,
    UsageArgumentError,
    aggregate,
    parse_timestamp,
    periods,
    window,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def test_daily_periods_include_both_ends():
    spans = periods("2026-12-30", "2027-01-02", DAILY)
    assert [s.label for s in spans] == ["2026-12-30", "2026-12-31", "2027-01-01", "2027-01-02"]
    assert spans[0].start == datetime(2026, 12, 30, tzinfo=UTC)
    assert spans[-1].end == datetime(2027, 1, 3, tzinfo=UTC)


def test_monthly_periods_cross_the_year():
    spans = periods("2026-11", "2027-02", MONTHLY)
    assert [s.label for s in spans] == ["2026-11", "2026-12", "2027-01", "2027-02"]
    assert spans[-1].end == datetime(2027, 3, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "end", "period", "message"),
    [
        ("2026-12-01", "2026-11-30", DAILY, "cannot be after"),
        ("2026-02-30", "2026-03-01", DAILY, "no such date"),
        ("2026/12/01", "2026-12-02", DAILY, "expected YYYY-MM-DD"),
        ("2026-12", "2026-12", DAILY, "expected YYYY-MM-DD"),
        ("2026-12-01", "2026-12-02", MONTHLY, "expected YYYY-MM"),
        ("2026-12-01", "2026-12-02", "", "no aggregation period"),
        ("2026-12-01", "2026-12-02", "WEEKLY", "no aggregation period"),
        ("2000-01-01", "2026-12-02", DAILY, "at most 3660"),
        ("1990-01", "2026-12", MONTHLY, "at most 240"),
        ("2026-12-01\x00", "2026-12-02", DAILY, "expected YYYY-MM-DD"),
        ("9999-12-31", "9999-12-31", DAILY, "out of range"),
        ("9999-12", "9999-12", MONTHLY, "out of range"),
    ],
)
def test_bad_periods(start: str, end: str, period: str, message: str):
    with pytest.raises(UsageArgumentError, match=message):
        periods(start, end, period)


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("2026-12-01T10:00:00Z", datetime(2026, 12, 1, 10, tzinfo=UTC)),
        ("2026-12-01T12:00:00+02:00", datetime(2026, 12, 1, 10, tzinfo=UTC)),
        ("2026-12-01T10:00:00", datetime(2026, 12, 1, 10, tzinfo=UTC)),
    ],
)
def test_timestamps(text: str, when: datetime):
    assert parse_timestamp(text, "t") == when


@pytest.mark.parametrize(
    ("after", "before"),
    [
        ("yesterday", "2026-12-01T00:00:00Z"),
        ("2026-12-02T00:00:00Z", "2026-12-01T00:00:00Z"),
        ("2000-01-01T00:00:00Z", "2026-12-01T00:00:00Z"),
        ("", "2026-12-01T00:00:00Z"),
        ("2026-12-01T00:00:00Z\x00", "2026-12-01T00:00:00Z"),
        ("9" * 100, "2026-12-01T00:00:00Z"),
        ("0001-01-01T00:00:00+01:00", "2026-12-01T00:00:00Z"),
        ("2026-12-01T00:00:00Z", "9999-12-31T23:59:59-01:00"),
    ],
)
def test_bad_windows(after: str, before: str):
    with pytest.raises(UsageArgumentError):
        window(after, before)


def test_an_allocation_across_midnight_splits_by_hand():
    # 2 slots of a 4-slot $8/h instance ($2 per slot-hour) from 22:00 on the 1st to 02:00 on
    # the 2nd: 4 slot-hours ($8) on each day.
    life = InstanceLife("a", "gpu", T0, None, 8.0, 4)
    use = AllocationUse(
        "t1.1",
        T0 + timedelta(hours=22),
        T0 + timedelta(hours=26),
        {"a": 2},
        pool="gpu",
        username="alice",
        workspace="ws",
        labels=("l1", "l2"),
    )
    now = T0 + timedelta(days=3)
    out = aggregate([use], [life], now, periods("2026-12-01", "2026-12-03", DAILY))
    assert [p.period.label for p in out] == ["2026-12-01", "2026-12-02", "2026-12-03"]
    assert [p.total.slot_seconds for p in out] == [4 * 3600, 4 * 3600, 0]
    assert [p.total.cost for p in out] == pytest.approx([8.0, 8.0, 0.0])
    first = out[0]
    assert {k: v.cost for k, v in first.by_username.items()} == pytest.approx({"alice": 8.0})
    assert set(first.by_experiment_label) == {"l1", "l2"}
    assert set(first.by_resource_pool) == {"gpu"} and set(first.by_workspace) == {"ws"}
    assert out[2].by_username == {}


@given(
    st.lists(
        st.tuples(st.integers(0, 96 * 60), st.integers(0, 96 * 60), st.integers(1, 4)),
        max_size=5,
    )
)
def test_days_add_up_to_the_whole(spans: list[tuple[int, int, int]]):
    life = InstanceLife("a", "gpu", T0, None, 3.0, 4)
    uses = [
        AllocationUse(
            f"a{i}",
            T0 + timedelta(minutes=min(a, b)),
            T0 + timedelta(minutes=max(a, b)),
            {"a": slots},
        )
        for i, (a, b, slots) in enumerate(spans)
    ]
    now = T0 + timedelta(days=5)
    days = aggregate(uses, [life], now, periods("2026-12-01", "2026-12-05", DAILY))
    whole = sum_shares(s for _, s in shares_of(uses, [life], now))
    assert sum(d.total.cost for d in days) == pytest.approx(whole.cost, abs=1e-9)
    assert sum(d.total.slot_seconds for d in days) == pytest.approx(whole.slot_seconds)
