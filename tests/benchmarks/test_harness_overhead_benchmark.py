"""The harness overhead benchmark's arithmetic: paired ratios, their median and its interval."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.harness_overhead import HarnessOverhead, median_ci, overhead_pct, paired_pct


def test_ratios_are_taken_round_by_round() -> None:
    assert paired_pct([1.0, 2.0], [1.01, 1.98]) == pytest.approx([1.0, -1.0])
    assert overhead_pct([1.0, 2.0, 4.0], [1.02, 2.0, 4.4]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        paired_pct([1.0], [1.0, 2.0])


def _bounds(text: str) -> tuple[float, float]:
    low, high = text.split(" … ")
    return float(low), float(high)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-20, 20), min_size=4, max_size=60))
def test_the_interval_holds_the_median(values: list[float]) -> None:
    low, high = _bounds(median_ci(values, random.Random(1), resamples=400))
    values_sorted = sorted(values)
    assert values_sorted[0] - 0.05 <= low <= high <= values_sorted[-1] + 0.05


def test_more_rounds_narrow_the_interval() -> None:
    noise = random.Random(7)
    few = [noise.gauss(0.5, 4) for _ in range(10)]
    many = [noise.gauss(0.5, 4) for _ in range(400)]
    width = [hi - lo for lo, hi in (_bounds(median_ci(v, random.Random(0))) for v in (few, many))]
    assert width[1] < width[0] / 2


def test_the_target_is_judged_on_the_median() -> None:
    bare = [0.004] * 9
    result = HarnessOverhead(
        samples={
            "bare": bare,
            "core": [0.00402] * 5 + [0.0048] * 4,  # median +0.5 %, four slow rounds
            "bare_loader": bare,
            "trainer": bare,
        },
        cpu={"bare": bare, "core": bare},
        steps=250,
    )
    assert result.misses() == []
    assert "met" in result.rows()[1][-1]
    result.samples["core"] = [0.00406] * 9
    assert result.misses() == ["harness overhead 1.50 % > 1 %"]
