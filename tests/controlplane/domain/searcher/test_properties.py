"""Properties every searcher keeps, whatever the trials do (hypothesis drives the trials)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.domain.searcher import make_searcher, restore_searcher

from .world import World, replay, roundtrip

SPACE: dict[str, Any] = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10, "count": 3},
    "layers": {"type": "int", "minval": 1, "maxval": 4, "count": 2},
    "opt": {"type": "categorical", "vals": ["sgd", {"name": "adam"}, [1, 2]]},
    "fixed": {"type": "const", "val": 7},
    "nested": {"dropout": {"type": "double", "minval": 0.0, "maxval": 0.5, "count": 2}},
}


def _asha(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "metric": "loss",
        "time_metric": "batches",
        "max_time": 27,
        "divisor": 3,
        **extra,
    }


CONFIGS: list[tuple[dict[str, Any], int]] = [
    ({"name": "single", "metric": "loss"}, 1),
    ({"name": "random", "metric": "loss", "max_trials": 7, "max_concurrent_trials": 3}, 3),
    ({"name": "random", "metric": "loss", "max_trials": 4, "max_concurrent_trials": 0}, 4),
    ({"name": "grid", "metric": "loss", "max_concurrent_trials": 5}, 5),
    (_asha("async_halving", num_rungs=3, max_trials=9, max_concurrent_trials=3), 3),
    (_asha("async_halving", num_rungs=3, max_trials=9, max_concurrent_trials=0), 9),
    (
        _asha("async_halving", num_rungs=3, max_trials=9, max_concurrent_trials=3, promotions=True),
        3,
    ),
    (_asha("adaptive_asha", max_trials=12, max_concurrent_trials=4), 4),
    (_asha("adaptive_asha", max_trials=12, mode="conservative", max_concurrent_trials=2), 3),
    (_asha("adaptive_asha", max_trials=12, max_concurrent_trials=4, promotions=True), 4),
    (
        _asha(
            "adaptive_asha",
            max_trials=12,
            max_concurrent_trials=4,
            promotions=True,
            mode="standard",
            sampler="random",
        ),
        4,
    ),
    (_asha("async_halving", num_rungs=3, max_trials=14, max_concurrent_trials=3, sampler="tpe"), 3),
    (_asha("adaptive_asha", max_trials=10, bracket_rungs=[2, 3], smaller_is_better=False), 16),
    (
        _asha(
            "adaptive_asha",
            max_trials=12,
            max_concurrent_trials=4,
            promotions=True,
            promotion_rule="curve",
        ),
        4,
    ),
    (
        _asha(
            "async_halving",
            num_rungs=3,
            max_trials=5,
            max_concurrent_trials=2,
            promotions=True,
            promotion_rule="curve",
            sampler="random",
            smaller_is_better=False,
        ),
        2,
    ),
    (
        {
            "name": "tpe",
            "metric": "loss",
            "max_trials": 6,
            "max_concurrent_trials": 2,
            "n_startup_trials": 2,
        },
        2,
    ),
]
IDS = [f"{c['name']}-{i}" for i, (c, _) in enumerate(CONFIGS)]


def _max_trials(config: dict[str, Any]) -> int:
    if config["name"] == "single":
        return 1
    if config["name"] == "grid":
        return 3 * 2 * 3 * 1 * 2
    return int(config["max_trials"])


def _run(config: dict[str, Any], limit: int, seed: int, data: st.DataObject) -> World:
    world = World(make_searcher(config, SPACE, seed), step=3, limit=limit)
    world.start()
    values: dict[str, float] = {}

    def choose(n: int) -> int:
        return data.draw(st.integers(0, n - 1))

    def metric(rid: str) -> float:
        values[rid] = (
            data.draw(st.floats(0, 10, allow_nan=False))
            if rid not in values
            else (values[rid] * data.draw(st.sampled_from([0.5, 0.9, 1.0, 1.1])))
        )
        return values[rid]

    for _ in range(400):
        if not world.move(choose, metric):
            break
    return world


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), index=st.integers(0, len(CONFIGS) - 1), seed=st.integers(0, 2**31 - 1))
def test_limits_replay_and_restore(data: st.DataObject, index: int, seed: int) -> None:
    config, limit = CONFIGS[index]
    world = _run(config, limit, seed, data)

    # Never more trials than max_trials, counting an InvalidHP trial's replacement as its own.
    assert world.creates() <= _max_trials(config) + world.invalid
    # When every trial is closed and nothing else can happen, the search has shut down.
    if not world.possible():
        assert world.shutdown is not None
        assert world.searcher.progress() == 1.0

    # The same seed and the same events give the same operations.
    again = replay(make_searcher(config, SPACE, seed), world.events)
    assert again == world.ops

    # A snapshot taken at any point, restored, continues exactly as the original.
    cut = data.draw(st.integers(0, len(world.events)))
    original = make_searcher(config, SPACE, seed)
    before = replay(original, world.events[:cut])
    restored = restore_searcher(config, SPACE, roundtrip(original.snapshot()))
    after = replay(restored, world.events[cut:], initial=False)
    assert before + after == world.ops


def test_different_seeds_give_different_hyperparameters() -> None:
    config = {"name": "random", "metric": "loss", "max_trials": 3}
    first = make_searcher(config, SPACE, 1).initial_operations()
    second = make_searcher(config, SPACE, 2).initial_operations()
    assert [op.hparams for op in first] != [op.hparams for op in second]  # type: ignore[union-attr]
