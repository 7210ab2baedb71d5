"""Rollups of metric series, kept at ingest so a zoomed-out chart never reads every report.

Per trial, group and metric name, and per aligned step bucket [start, start + level) of each
width in `LEVELS`, a rollup holds the first minimum, the first maximum and the last point of the
reports in it that carry the metric. Merging summaries is associative: a batch of reports
summarised before it is written merges into the stored rollup as its reports would one by one.
(A retried report never reaches the rollups: the reports' unique key drops it first.)

A chart bucket of width w (a power of two, `series_reduction.bucket_width`) is read from the
level `read_level(w)`: one or two whole rollup buckets each, so the answer is exactly what
`series_reduction.reduce_series` keeps from every stored point. Levels grow by 4, so a chart of
B buckets reads at most 2B rollups per metric, however long the run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

LEVELS = tuple(4**k for k in range(1, 9))
"""Rollup bucket widths in steps, 4 to 65,536 (every one divides the next)."""
COARSEST = LEVELS[-1]
MAX_NAMES = 100
"""A report with more metrics than this is not rolled up: its trial and group get a marker and
charts of them reduce the stored reports instead (1,000 names would mean 8,000 rollup writes
per report)."""
MARKER_LEVEL = 0
"""The level of the marker row (name "", start 0): this trial's group is not fully rolled up."""


class Summary(NamedTuple):
    """The first minimum, the first maximum (None: no finite value) and the last point of a
    bucket of one metric; `last_value` is None where the last report's value is not a finite
    number. A tuple: a chart merges tens of thousands of these per request."""

    min_step: int | None
    min_value: float | None
    max_step: int | None
    max_value: float | None
    last_step: int
    last_value: float | None


def number(value: Any) -> float | None:
    """A chartable value: a finite int or float (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


def point(step: int, value: float | None) -> Summary:
    if value is None:
        return Summary(None, None, None, None, step, None)
    return Summary(step, value, step, value, step, value)


def _first_min(a: Summary, b: Summary) -> tuple[int | None, float | None]:
    if b.min_value is None or b.min_step is None:
        return a.min_step, a.min_value
    if a.min_value is None or a.min_step is None:
        return b.min_step, b.min_value
    if (b.min_value, b.min_step) < (a.min_value, a.min_step):
        return b.min_step, b.min_value
    return a.min_step, a.min_value


def _first_max(a: Summary, b: Summary) -> tuple[int | None, float | None]:
    if b.max_value is None or b.max_step is None:
        return a.max_step, a.max_value
    if a.max_value is None or a.max_step is None:
        return b.max_step, b.max_value
    if b.max_value > a.max_value or (b.max_value == a.max_value and b.max_step < a.max_step):
        return b.max_step, b.max_value
    return a.max_step, a.max_value


def merge(a: Summary, b: Summary) -> Summary:
    """The summary of both; `b` holds the later reports (it wins a tie of the last step, as
    the report stored later does)."""
    later = b if b.last_step >= a.last_step else a
    return Summary(*_first_min(a, b), *_first_max(a, b), later.last_step, later.last_value)


Key = tuple[str, int, int]
"""(metric name, level, bucket start)."""


def rollup(
    reports: Iterable[tuple[int, Mapping[str, Any]]], levels: Iterable[int] = LEVELS
) -> dict[Key, Summary] | None:
    """Rollups of `reports`, (steps, avg_metrics) in the order they were stored; None when one
    carries more than `MAX_NAMES` metrics (the group then needs a marker)."""
    widths = tuple(levels)
    out: dict[Key, Summary] = {}
    for steps, avg in reports:
        if len(avg) > MAX_NAMES:
            return None
        for name, raw in avg.items():
            here = point(steps, number(raw))
            for level in widths:
                key = (name, level, steps - steps % level)
                held = out.get(key)
                out[key] = here if held is None else merge(held, here)
    return out


def read_level(width: int) -> int:
    """The rollup level a chart bucket `width` steps wide is read from (1: the stored reports,
    for buckets narrower than the finest rollup)."""
    return max((level for level in LEVELS if level <= width), default=1)


def combine(parts: Iterable[tuple[str, int, Summary]], width: int) -> dict[str, dict[int, Summary]]:
    """Summaries (name, start, summary) of disjoint step ranges merged into aligned buckets of
    `width`: {name: {bucket start: summary}}."""
    out: dict[str, dict[int, Summary]] = {}
    for name, start, summary in parts:
        buckets = out.setdefault(name, {})
        key = start - start % width
        held = buckets.get(key)
        buckets[key] = summary if held is None else merge(held, summary)
    return out


def drawn(by_name: Mapping[str, Mapping[int, Summary]]) -> dict[int, dict[str, float]]:
    """The points a chart draws from bucket summaries: {step: {name: value}}, where a step whose
    last value is not a number is there without one."""
    out: dict[int, dict[str, float]] = {}
    for name, buckets in by_name.items():
        for s in buckets.values():
            values = out.setdefault(s.last_step, {})
            if s.last_value is not None:
                values[name] = s.last_value
            if s.min_step is not None and s.min_value is not None:
                out.setdefault(s.min_step, {})[name] = s.min_value
            if s.max_step is not None and s.max_value is not None:
                out.setdefault(s.max_step, {})[name] = s.max_value
    return out
