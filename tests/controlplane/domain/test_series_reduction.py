"""The chart reduction: spikes survive, at most three points per aligned bucket, exact if small."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.series_reduction import POINTS_PER_BUCKET, bucket_width, reduce_series


@st.composite
def series(draw: st.DrawFn) -> tuple[list[int], list[float | None]]:
    gaps = draw(st.lists(st.integers(1, 50), min_size=1, max_size=400))
    steps = []
    step = draw(st.integers(0, 1000))
    for gap in gaps:
        step += gap
        steps.append(step)
    values = draw(
        st.lists(
            st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=32)),
            min_size=len(steps),
            max_size=len(steps),
        )
    )
    return steps, values


def _bucket(steps: list[int], i: int, buckets: int) -> int:
    return steps[i] // bucket_width(steps[0], steps[-1], buckets)


@given(st.integers(0, 10**9), st.integers(0, 10**6), st.integers(1, 5000))
def test_bucket_width_is_the_smallest_power_of_two_that_fits(lo: int, span: int, b: int) -> None:
    hi = lo + span
    width = bucket_width(lo, hi, b)
    assert width & (width - 1) == 0
    assert hi // width - lo // width + 1 <= b
    assert width == 1 or hi // (width // 2) - lo // (width // 2) + 1 > b


@given(series(), st.integers(1, 60))
def test_at_most_three_points_per_bucket_and_sorted(
    data: tuple[list[int], list[float | None]], buckets: int
) -> None:
    steps, values = data
    kept = reduce_series(steps, values, buckets=buckets)
    assert kept == sorted(set(kept))
    per_bucket: dict[int, int] = {}
    for i in kept:
        per_bucket[_bucket(steps, i, buckets)] = per_bucket.get(_bucket(steps, i, buckets), 0) + 1
    if len(steps) > POINTS_PER_BUCKET * buckets:
        assert max(per_bucket.values()) <= POINTS_PER_BUCKET


@given(series(), st.integers(1, 60))
def test_exact_when_under_the_limit(
    data: tuple[list[int], list[float | None]], buckets: int
) -> None:
    steps, values = data
    kept = reduce_series(steps, values, buckets=buckets)
    if len(steps) <= POINTS_PER_BUCKET * buckets:
        assert kept == list(range(len(steps)))


@given(series(), st.integers(1, 60))
def test_every_bucket_keeps_its_extremes_and_last(
    data: tuple[list[int], list[float | None]], buckets: int
) -> None:
    steps, values = data
    kept = set(reduce_series(steps, values, buckets=buckets))
    groups: dict[int, list[int]] = {}
    for i in range(len(steps)):
        groups.setdefault(_bucket(steps, i, buckets), []).append(i)
    for members in groups.values():
        assert members[-1] in kept
        finite = [values[i] for i in members if values[i] is not None and math.isfinite(values[i])]
        if finite:
            drawn = [values[i] for i in members if i in kept]
            assert min(finite) in drawn
            assert max(finite) in drawn


@given(st.integers(2, 100_000), st.integers(1, 2000), st.floats(-1e6, 1e6))
def test_a_one_step_spike_is_always_kept(count: int, buckets: int, height: float) -> None:
    steps = list(range(count))
    spike = count // 2
    values: list[float | None] = [0.0] * count
    values[spike] = 1e9 if height >= 0 else -1e9
    assert spike in reduce_series(steps, values, buckets=buckets)


@pytest.mark.parametrize(
    ("steps", "values", "buckets", "expected"),
    [
        ([1, 2, 3], [5.0, 1.0, 3.0], 1, [0, 1, 2]),  # 3 points fit one bucket: exact
        ([1, 2, 3, 4], [5.0, 1.0, 9.0, 3.0], 1, [1, 2, 3]),  # min 1.0, max 9.0, last
        ([1, 2, 3, 4], [None, None, None, None], 1, [3]),  # nothing finite: last only
        ([1, 2, 3, 4], [2.0, 2.0, 2.0, 2.0], 1, [0, 3]),  # ties: the first min and max
        ([0, 1, 2, 3, 4, 5, 6, 7], [0, 9, 1, 2, 3, 4, 8, 5], 2, [0, 1, 3, 4, 6, 7]),
    ],
)
def test_reduction_table(
    steps: list[int], values: list[float | None], buckets: int, expected: list[int]
) -> None:
    assert reduce_series(steps, values, buckets=buckets) == expected


def test_zero_buckets_is_refused() -> None:
    with pytest.raises(ValueError, match="buckets"):
        reduce_series([1], [1.0], buckets=0)
