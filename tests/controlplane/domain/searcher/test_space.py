"""Grid axes and random sampling (reference §4.3, §4.4: Determined's grid_test cases)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.domain.searcher import Create, SearcherConfigError, TrialClosed, make_searcher
from controlplane.domain.searcher.space import Grid, axis, grid_size, sample


def _int(lo: int, hi: int, count: int) -> dict[str, Any]:
    return {"type": "int", "minval": lo, "maxval": hi, "count": count}


@pytest.mark.parametrize(
    ("hp", "values"),
    [
        (_int(0, 20, 3), [0, 10, 20]),
        (_int(0, 10, 3), [0, 5, 10]),
        (_int(0, 4, 5), [0, 1, 2, 3, 4]),
        (_int(-4, -2, 3), [-4, -3, -2]),
        (_int(0, 4, 50), [0, 1, 2, 3, 4]),
        (_int(0, 3, 1), [2]),  # the rounded midpoint, 1.5 rounds away from zero as Go does
        (_int(-3, 0, 1), [-2]),
        ({"type": "double", "minval": 0.0, "maxval": 1.0, "count": 1}, [0.5]),
        ({"type": "double", "minval": 0.0, "maxval": 1.0, "count": 3}, [0.0, 0.5, 1.0]),
        ({"type": "log", "minval": -3, "maxval": -2, "base": 10, "count": 2}, [0.001, 0.01]),
        ({"type": "categorical", "vals": ["a", [1], {"b": 2}]}, ["a", [1], {"b": 2}]),
        ({"type": "const", "val": {"x": 1}}, [{"x": 1}]),
    ],
)
def test_axis(hp: dict[str, Any], values: list[Any]) -> None:
    assert axis(("x",), hp) == pytest.approx(values) if hp["type"] == "log" else values


def test_counts_multiply() -> None:
    space = {
        "a": _int(0, 10, 2),
        "b": {"type": "double", "minval": 0, "maxval": 1, "count": 3},
        "c": {"type": "log", "minval": 0, "maxval": 3, "base": 2, "count": 4},
    }
    assert grid_size(space) == Grid(space).size == 24


def test_two_int_axes_give_their_product_last_name_fastest() -> None:
    grid = Grid({"y": _int(0, 10, 3), "x": _int(0, 20, 3)})
    points = [grid.point(i) for i in range(grid.size)]
    assert points[:4] == [
        {"x": 0, "y": 0},
        {"x": 0, "y": 5},
        {"x": 0, "y": 10},
        {"x": 10, "y": 0},
    ]
    assert {(p["x"], p["y"]) for p in points} == {(x, y) for x in (0, 10, 20) for y in (0, 5, 10)}


def test_nested_maps_give_one_axis_per_leaf_and_empty_maps_one_value() -> None:
    space = {"opt": {"lr": _int(1, 2, 2), "mom": {"type": "categorical", "vals": [0, 1]}}, "e": {}}
    grid = Grid(space)
    assert grid.size == 4
    assert grid.point(0) == {"e": {}, "opt": {"lr": 1, "mom": 0}}
    assert grid.point(3) == {"e": {}, "opt": {"lr": 2, "mom": 1}}


def test_grid_search_pops_points_from_the_end_and_uses_each_once() -> None:
    space = {"a": _int(0, 2, 3), "b": _int(0, 1, 2)}
    searcher = make_searcher({"name": "grid", "metric": "m", "max_concurrent_trials": 2}, space, 0)
    ops = searcher.initial_operations()
    assert [op.hparams for op in ops] == [{"a": 2, "b": 1}, {"a": 2, "b": 0}]  # type: ignore[union-attr]
    seen = [op.hparams for op in ops]  # type: ignore[union-attr]
    pending = [op.request_id for op in ops]
    while pending:
        for op in searcher.on_event(TrialClosed(pending.pop(0))):
            if isinstance(op, Create):
                seen.append(op.hparams)
                pending.append(op.request_id)
    assert len(seen) == 6
    assert sorted((p["a"], p["b"]) for p in seen) == [(a, b) for a in range(3) for b in range(2)]


def test_grid_needs_counts() -> None:
    with pytest.raises(SearcherConfigError, match="count was not provided"):
        make_searcher(
            {"name": "grid", "metric": "m"}, {"a": {"type": "int", "minval": 0, "maxval": 3}}, 0
        )


def test_a_grid_of_10_to_the_8_points_is_refused_before_anything_is_built() -> None:
    space = {f"h{i}": _int(0, 100, 10) for i in range(8)}
    with pytest.raises(SearcherConfigError, match="100000000 points"):
        make_searcher({"name": "grid", "metric": "m"}, space, 0)


LEAF = st.one_of(
    st.builds(
        lambda a, b: _int(min(a, b), max(a, b), 1), st.integers(-50, 50), st.integers(-50, 50)
    ),
    st.builds(
        lambda a, b: {"type": "double", "minval": min(a, b), "maxval": max(a, b)},
        st.floats(-5, 5),
        st.floats(-5, 5),
    ),
    st.builds(
        lambda a, b: {"type": "log", "minval": min(a, b), "maxval": max(a, b), "base": 2},
        st.floats(-5, 5),
        st.floats(-5, 5),
    ),
    st.builds(lambda v: {"type": "categorical", "vals": v}, st.lists(st.integers(), min_size=1)),
    st.builds(lambda v: {"type": "const", "val": v}, st.text(max_size=3)),
)
SPACES = st.recursive(
    st.dictionaries(st.text("abc", min_size=1, max_size=3), LEAF, max_size=3),
    lambda inner: st.dictionaries(st.text("xyz", min_size=1, max_size=3), inner, max_size=3),
    max_leaves=6,
)


def _within(hp: Any, value: Any) -> bool:
    if "type" not in hp:
        return isinstance(value, dict) and all(_within(hp[k], value[k]) for k in hp)
    kind = hp["type"]
    if kind == "int":
        return isinstance(value, int) and hp["minval"] <= value <= hp["maxval"]
    if kind == "double":
        return hp["minval"] <= value <= hp["maxval"]
    if kind == "log":
        return 2 ** hp["minval"] * (1 - 1e-9) <= value <= 2 ** hp["maxval"] * (1 + 1e-9)
    if kind == "categorical":
        return value in hp["vals"]
    return value == hp["val"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(space=SPACES, seed=st.integers(0, 2**32))
def test_samples_lie_in_their_ranges_and_keep_the_nesting(space: dict[str, Any], seed: int) -> None:
    point = sample(space, random.Random(seed))
    assert set(point) == set(space)
    assert all(_within(space[name], point[name]) for name in space)
    assert point == sample(space, random.Random(seed))
