"""Metric series reduced to what a chart can draw: min, max and last per pixel column.

A chart `width` columns wide can show at most three distinct facts per column: the lowest and
highest value in it (the vertical stroke) and where the line leaves it. Keeping exactly those
points is deterministic and never hides a spike, unlike random sampling (Determined's
`ORDER BY random()`), which drops a one-step spike almost always. When the window holds no more
than `3 * width` points, every point is kept: the chart is exact when zoomed in far enough.

Buckets are aligned step ranges [k * w, (k + 1) * w) whose width w is a power of two: the
smallest one that splits the window into no more buckets than asked for (so at least half as
many). Aligned widths are what lets the master answer from rollups kept at ingest
(`domain.series_rollup`): a bucket of width w is exactly one or two rollup buckets, never a
part of one, so the answer from rollups and the answer from every stored point are the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

POINTS_PER_BUCKET = 3
MAX_BUCKETS = 10_000
"""Pixel columns a request may ask for (a 4K display twice over)."""


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def bucket_width(lo: int, hi: int, buckets: int) -> int:
    """The smallest power of two w such that the aligned buckets [k*w, (k+1)*w) meeting the
    steps [lo, hi] number at most `buckets`."""
    if buckets < 1:
        raise ValueError("buckets must be at least 1")
    width = 1
    while hi // width - lo // width + 1 > buckets:
        width *= 2
    return width


def reduce_series(
    steps: Sequence[int], values: Sequence[float | None], *, buckets: int
) -> list[int]:
    """Indices (ascending) of the points to draw of a series sorted by step: all of them when
    they are no more than `POINTS_PER_BUCKET * buckets`, else `reduce_aligned` with buckets of
    `bucket_width(first step, last step, buckets)`."""
    if buckets < 1:
        raise ValueError("buckets must be at least 1")
    count = len(steps)
    if count <= POINTS_PER_BUCKET * buckets:
        return list(range(count))
    return reduce_aligned(steps, values, width=bucket_width(steps[0], steps[-1], buckets))


def reduce_aligned(
    steps: Sequence[int], values: Sequence[float | None], *, width: int
) -> list[int]:
    """Indices (ascending) of the points to keep of a series sorted by step, per aligned
    bucket [k * width, (k + 1) * width): the first point holding the minimum, the first holding
    the maximum, and the last point. `steps` ascend (a step may repeat); `values[i]` may be
    None or not finite (the step is kept as `last` only)."""
    if width < 1:
        raise ValueError("width must be at least 1")
    count = len(steps)
    keep: list[int] = []
    start = 0
    while start < count:
        bucket = steps[start] // width
        end = start
        low = high = -1
        while end < count and steps[end] // width == bucket:
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
