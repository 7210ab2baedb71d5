"""`name: tpe`: Optuna's TPE sampler behind the searcher interface."""

from __future__ import annotations

import random
from typing import Any

from controlplane.domain.searcher import Create, TrialClosed, ValidationReported, make_searcher

SPACE: dict[str, Any] = {
    "x": {"type": "double", "minval": 0.0, "maxval": 1.0},
    "n": {"type": "int", "minval": 1, "maxval": 8},
    "nested": {
        "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
        "act": {"type": "categorical", "vals": ["relu", ["tanh"], {"k": 1}]},
    },
    "fixed": {"type": "const", "val": "yes"},
}


def _objective(h: dict[str, Any]) -> float:
    return (h["x"] - 0.3) ** 2 + (h["n"] - 6) ** 2 / 50


def _search(name: str, seed: int, trials: int = 40) -> list[dict[str, Any]]:
    config = {"name": name, "metric": "loss", "max_trials": trials, "max_concurrent_trials": 1}
    if name == "tpe":
        config["n_startup_trials"] = 8
    searcher = make_searcher(config, SPACE, seed)
    pending = list(searcher.initial_operations())
    seen: list[dict[str, Any]] = []
    while pending:
        op = pending.pop(0)
        assert isinstance(op, Create)
        seen.append(op.hparams)
        searcher.on_event(ValidationReported(op.request_id, {"loss": _objective(op.hparams)}))
        pending += [
            o for o in searcher.on_event(TrialClosed(op.request_id)) if isinstance(o, Create)
        ]
    return seen


def test_values_keep_their_types_ranges_and_nesting() -> None:
    for h in _search("tpe", 5, trials=12):
        assert 0.0 <= h["x"] <= 1.0 and isinstance(h["n"], int) and 1 <= h["n"] <= 8
        assert 1e-4 * 0.999 <= h["nested"]["lr"] <= 1e-1 * 1.001
        assert h["nested"]["act"] in SPACE["nested"]["act"]["vals"]
        assert h["fixed"] == "yes"


def test_the_same_seed_repeats_and_another_seed_differs() -> None:
    assert _search("tpe", 5, trials=12) == _search("tpe", 5, trials=12)
    assert _search("tpe", 5, trials=12) != _search("tpe", 6, trials=12)


def test_after_its_startup_trials_tpe_samples_nearer_the_optimum_than_random() -> None:
    seeds = random.Random(0).sample(range(10**6), 3)
    for seed in seeds:
        tpe = sorted(_objective(h) for h in _search("tpe", seed)[20:])
        rnd = sorted(_objective(h) for h in _search("random", seed)[20:])
        assert tpe[len(tpe) // 2] < rnd[len(rnd) // 2]
