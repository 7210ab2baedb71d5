"""Metric series reduced to what a chart can draw: min, max and last per pixel column.

A chart `width` columns wide can show at most three distinct facts per column: the lowest and
highest value in it (the vertical stroke) and where the line leaves it. Keeping exactly those
points is deterministic and never hides a spike, unlike random sampling (Determined's
`ORDER BY random()`), which drops a one-step spike almost always. When the window holds no more
than `3 * width` points, every point is kept: the chart is exact when zoomed in far enough.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

POINTS_PER_BUCKET = 3
MAX_BUCKETS = 10_000
"""Pixel columns a request may ask for (a 4K display twice over)."""


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def reduce_series(
    steps: Sequence[int], values: Sequence[float | None], *, buckets: int
) -> list[int]:
    """Indices (ascending) of the points to draw of a series sorted by step.

    `steps` ascend; `values[i]` may be None or not finite (the step is kept as `last` only).
    Buckets split the steps' span [first, last] into `buckets` equal ranges; in each, the first
    point holding the minimum, the first holding the maximum, and the last point are kept.
    """
    if buckets < 1:
        raise ValueError("buckets must be at least 1")
    count = len(steps)
    if count <= POINTS_PER_BUCKET * buckets:
        return list(range(count))
    lo, hi = steps[0], steps[-1]
    span = hi - lo + 1
    keep: list[int] = []
    start = 0
    while start < count:
        bucket = (steps[start] - lo) * buckets // span
        end = start
        low = high = -1
        while end < count and (steps[end] - lo) * buckets // span == bucket:
            value = values[end]
            if _finite(value):
                if low < 0 or value < values[low]:  # type: ignore[operator]
                    low = end
                if high < 0 or value > values[high]:  # type: ignore[operator]
                    high = end
            end += 1
        chosen = {end - 1}
        if low >= 0:
            chosen.update((low, high))
        keep.extend(sorted(chosen))
        start = end
    return keep
