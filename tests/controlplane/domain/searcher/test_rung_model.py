"""The BOHB-style sampler of ASHA: random draws as `space.sample`, then TPE on the rung results."""

from __future__ import annotations

import random
import statistics
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.searcher.rung_model import RungModel, thin
from controlplane.domain.searcher.rungs import EXITED_METRIC, ladder
from controlplane.domain.searcher.space import sample

from .test_properties import SPACE


@given(seed=st.integers(0, 2**31 - 1))
def test_random_points_are_the_draws_of_space_sample(seed: int) -> None:
    model = RungModel(SPACE)
    ours, theirs = random.Random(seed), random.Random(seed)
    for _ in range(3):
        hparams, _ = model.propose(ours, [])
        assert hparams == sample(SPACE, theirs)
    assert ours.getstate() == theirs.getstate()


LINE: dict[str, Any] = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}}


def _results(model: RungModel, rng: random.Random) -> list[tuple[Any, float]]:
    """Twenty random points scored by their distance to 0.8 (smaller is better)."""
    points = [model.propose(rng, [])[1] for _ in range(20)]
    return [(point, abs(point['["x"]'] - 0.8)) for point in points]


def test_once_a_rung_has_enough_results_new_points_go_where_the_good_ones_are() -> None:
    model = RungModel(LINE, random_fraction=0.0)
    rng = random.Random(3)
    results = _results(model, rng)
    proposed = [model.propose(rng, results)[0]["x"] for _ in range(30)]
    # Uniform points are 0.34 from 0.8 on average; TPE's stay near the best results.
    assert statistics.mean(abs(x - 0.8) for x in proposed) < 0.15


def test_the_model_waits_for_min_points() -> None:
    model = RungModel(LINE, random_fraction=0.0)
    good = _results(model, random.Random(4))
    # Too few results: random draws, the same as space.sample.
    twin = random.Random(9)
    assert model.propose(random.Random(9), good[:1])[0] == sample(LINE, twin)


A, B, C, D = ({"x": n} for n in range(4))


@pytest.mark.parametrize(
    ("reached", "expected"),
    [
        ([], []),
        # Further is better whatever the value; at the same rung, the value decides.
        ([(1, 0.5, A), (3, 0.9, B), (3, 0.2, C), (1, 0.1, D)], [C, B, D, A]),
        # A trial that exited early ranks last at its rung, still above the rung below.
        ([(1, -5.0, A), (3, EXITED_METRIC, B)], [B, A]),
    ],
)
def test_ladder_ranks_by_the_highest_rung_reached_then_by_the_result_there(
    reached: list[tuple[int, float, Any]], expected: list[Any]
) -> None:
    ranked = ladder(reached)
    assert [point for point, _ in ranked] == expected
    assert [score for _, score in ranked] == [float(i) for i in range(len(expected))]


def test_trials_that_stopped_at_the_first_rung_steer_the_model_away() -> None:
    """Points above 0.5 failed the first rung (a learning rate that diverges); below, the
    closer to 0.5 the better at rung 9 (the best rate is just below the cliff). Fitted on rung
    9 alone, TPE knows nothing of the cliff and puts nearly all of its points past it (149 of
    150 here); the ladder keeps the failures in the model."""
    past_the_cliff = 0
    for seed in range(5, 10):
        model = RungModel(LINE, random_fraction=0.0)
        rng = random.Random(seed)
        points = [model.propose(rng, [])[1] for _ in range(30)]
        reached = [(1, 0.0, p) if p['["x"]'] > 0.5 else (9, 0.5 - p['["x"]'], p) for p in points]
        proposed = [model.propose(rng, ladder(reached))[0]["x"] for _ in range(30)]
        past_the_cliff += sum(x > 0.5 for x in proposed)
    assert past_the_cliff < 50


def test_the_same_generator_state_gives_the_same_point() -> None:
    model = RungModel(SPACE)
    rng = random.Random(1)
    points = [model.propose(rng, [])[1] for _ in range(8)]
    scored = [(point, float(index)) for index, point in enumerate(points)]
    state = rng.getstate()
    first = model.propose(rng, scored)
    rng.setstate(state)
    assert model.propose(rng, scored) == first


@given(size=st.integers(0, 60), limit=st.integers(2, 20))
def test_thin_keeps_the_best_and_a_spread_of_the_rest(size: int, limit: int) -> None:
    ranked = [({"x": i}, float(i)) for i in range(size)]
    kept = thin(ranked, limit)
    assert len(kept) == min(size, limit)
    assert kept[: limit // 2] == ranked[: limit // 2]
    assert sorted(kept, key=lambda e: e[1]) == kept  # in order, no duplicates
    assert len({score for _, score in kept}) == len(kept)
    if size > limit:
        assert kept[-1][1] >= size - (size - limit // 2) / (limit - limit // 2) - 1
