"""Rollups kept at ingest give exactly the points the reduction keeps from every report, in
whatever batches the reports arrive, and refuse reports with too many metrics."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import series_rollup as r
from controlplane.domain.series_reduction import reduce_aligned

VALUE = st.one_of(st.none(), st.sampled_from(["NaN", True]), st.integers(-5, 5), st.floats(-10, 10))


@st.composite
def reports(draw: st.DrawFn) -> list[tuple[int, dict[str, object]]]:
    steps = sorted(draw(st.lists(st.integers(0, 3000), min_size=1, max_size=300)))
    out = []
    for step in steps:
        names = draw(st.sets(st.sampled_from(["loss", "acc"]), min_size=1))
        out.append((step, {n: draw(VALUE) for n in sorted(names)}))
    return out


def _points(reps: list[tuple[int, dict[str, object]]], name: str, width: int) -> dict:
    carrying = [(s, avg[name]) for s, avg in reps if name in avg]
    steps = [s for s, _ in carrying]
    values = [r.number(v) for _, v in carrying]
    return {steps[i]: values[i] for i in reduce_aligned(steps, values, width=width)}


def _drawn(reps: list[tuple[int, dict[str, object]]], width: int) -> dict[str, dict]:
    level = r.read_level(width)
    summaries = r.rollup(reps)
    assert summaries is not None
    parts = [(n, start, s) for (n, lvl, start), s in summaries.items() if lvl == level]
    if level == 1:  # below the finest rollup: the reports themselves
        parts = [(n, s, r.point(s, r.number(v))) for s, avg in reps for n, v in avg.items()]
    out: dict[str, dict] = {}
    for name, buckets in r.combine(parts, width).items():
        for b in buckets.values():
            kept = out.setdefault(name, {})
            kept[b.last_step] = b.last_value
            if b.min_step is not None:
                kept[b.min_step] = b.min_value
                kept[b.max_step] = b.max_value
    return out


@given(reports(), st.sampled_from([4, 8, 16, 32, 64, 128, 256, 1024, 4096]))
def test_rollups_keep_what_the_reduction_keeps(
    reps: list[tuple[int, dict[str, object]]], width: int
) -> None:
    # One report per step, so "the point at a step" means one value.
    seen: set[int] = set()
    reps = [(s, a) for s, a in reps if not (s in seen or seen.add(s))]  # type: ignore[func-returns-value]
    drawn = _drawn(reps, width)
    for name in ("loss", "acc"):
        assert drawn.get(name, {}) == _points(reps, name, width)


@given(reports(), st.lists(st.integers(1, 50), max_size=10))
def test_batches_merge_to_the_same_rollup(
    reps: list[tuple[int, dict[str, object]]], cuts: list[int]
) -> None:
    whole = r.rollup(reps)
    merged: dict = {}
    at = 0
    for size in [*cuts, len(reps)]:
        part = r.rollup(reps[at : at + size])
        assert part is not None
        for key, s in part.items():
            merged[key] = s if key not in merged else r.merge(merged[key], s)
        at += size
    assert merged == whole
    assert all(r.merge(s, s) == s for s in merged.values())


def test_a_report_with_too_many_metrics_is_not_rolled_up() -> None:
    many = {f"m{i}": 1.0 for i in range(r.MAX_NAMES + 1)}
    assert r.rollup([(1, {"loss": 1.0}), (2, many)]) is None
    assert r.rollup([(1, {f"m{i}": 1.0 for i in range(r.MAX_NAMES)})]) is not None


def test_levels_divide_each_other_and_read_level() -> None:
    assert all(b % a == 0 for a, b in zip(r.LEVELS, r.LEVELS[1:], strict=False))
    assert [r.read_level(w) for w in (1, 2, 4, 8, 16, 1 << 20)] == [1, 1, 4, 4, 16, r.COARSEST]


def test_ties_first_extremes_and_the_later_last() -> None:
    a, b = r.point(5, 1.0), r.point(5, 2.0)
    assert r.merge(a, b).last_value == 2.0 and r.merge(b, a).last_value == 1.0
    flat = r.rollup([(1, {"x": 3.0}), (2, {"x": 3.0}), (3, {"x": 3.0})], (4,))
    assert flat is not None
    s = flat[("x", 4, 0)]
    assert (s.min_step, s.max_step, s.last_step) == (1, 1, 3)
