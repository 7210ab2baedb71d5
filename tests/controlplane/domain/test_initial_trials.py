"""The first trials each searcher creates, from an expanded config."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.initial_trials import MAX_SEED, grid_points, plan_initial_trials

SPACE = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10, "count": 4},
    "layers": {"type": "int", "minval": 1, "maxval": 3, "count": 3},
    "act": {"type": "categorical", "vals": ["relu", "tanh"]},
    "const": {"type": "const", "val": 7},
    "nested": {"drop": {"type": "double", "minval": 0.0, "maxval": 0.5, "count": 2}},
}


@pytest.mark.parametrize(
    ("searcher", "expected"),
    [
        ({"name": "single", "metric": "m"}, 1),
        ({"name": "random", "max_trials": 5, "max_concurrent_trials": 16}, 5),
        ({"name": "random", "max_trials": 50, "max_concurrent_trials": 16}, 16),
        ({"name": "random", "max_trials": 50, "max_concurrent_trials": 0}, 50),
        ({"name": "grid", "max_concurrent_trials": 0}, 4 * 3 * 2 * 1 * 2),
        ({"name": "grid", "max_concurrent_trials": 16}, 16),
        ({"name": "async_halving", "max_trials": 9, "max_concurrent_trials": 4}, 4),
        ({"name": "adaptive_asha", "max_trials": 3, "max_concurrent_trials": 16}, 3),
    ],
)
def test_trial_counts(searcher: dict[str, object], expected: int) -> None:
    assert len(plan_initial_trials(searcher, SPACE, random.Random(1))) == expected


def test_int_axis_is_clamped_to_the_range() -> None:
    points = grid_points({"n": {"type": "int", "minval": 1, "maxval": 2, "count": 10}})
    assert [p["n"] for p in points] == [1, 2]


def test_same_seed_same_trials() -> None:
    s = {"name": "random", "max_trials": 8}
    a = plan_initial_trials(s, SPACE, random.Random(42))
    b = plan_initial_trials(s, SPACE, random.Random(42))
    assert a == b


@given(seed=st.integers(0, 2**32))
def test_samples_stay_in_range(seed: int) -> None:
    for t in plan_initial_trials({"name": "random", "max_trials": 4}, SPACE, random.Random(seed)):
        hp = t.hparams
        assert 1e-4 <= hp["lr"] <= 1e-1
        assert 1 <= hp["layers"] <= 3 and isinstance(hp["layers"], int)
        assert hp["act"] in ("relu", "tanh") and hp["const"] == 7
        assert 0.0 <= hp["nested"]["drop"] <= 0.5
        assert 0 <= t.seed <= MAX_SEED
