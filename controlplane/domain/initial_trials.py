"""The first trials a searcher asks for, from an expanded config. Pure; randomness is passed in.

Adaptive searching (reacting to validations) belongs to the searcher loop; this only decides what
Determined's searchers create up front, so an experiment has trials the moment it is created.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any

from controlplane.domain.errors import InvalidArgument

MAX_SEED = 2**31 - 1
# Trials are created (rows, tasks) when the experiment is; a bigger plan is refused, not built.
MAX_INITIAL_TRIALS = 10_000


@dataclass(frozen=True)
class TrialRequest:
    hparams: dict[str, Any]
    seed: int


def _sample(hp: dict[str, Any], rng: random.Random) -> Any:
    kind = hp.get("type")
    if kind == "const":
        return hp["val"]
    if kind == "int":
        return rng.randint(int(hp["minval"]), int(hp["maxval"]))
    if kind == "double":
        return rng.uniform(float(hp["minval"]), float(hp["maxval"]))
    if kind == "log":
        return float(hp["base"]) ** rng.uniform(float(hp["minval"]), float(hp["maxval"]))
    if kind == "categorical":
        return rng.choice(list(hp["vals"]))
    return {name: _sample(sub, rng) for name, sub in hp.items()}


def sample_hparams(space: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    return {name: _sample(hp, rng) for name, hp in sorted(space.items())}


def _axis(hp: dict[str, Any]) -> list[Any]:
    kind = hp.get("type")
    if kind == "const":
        return [hp["val"]]
    if kind == "categorical":
        return list(hp["vals"])
    if kind in ("int", "double", "log"):
        lo, hi, count = float(hp["minval"]), float(hp["maxval"]), int(hp.get("count") or 1)
        if kind == "int":
            count = min(count, int(hi - lo) + 1)
        points = [lo] if count == 1 else [lo + (hi - lo) * i / (count - 1) for i in range(count)]
        if kind == "int":
            return sorted({round(p) for p in points})
        if kind == "log":
            return [math.pow(float(hp["base"]), p) for p in points]
        return points
    return [dict(zip(hp.keys(), combo, strict=True)) for combo in _product(hp)]


def _axis_size(hp: dict[str, Any]) -> int:
    """len(_axis(hp)) at most, without building it."""
    kind = hp.get("type")
    if kind == "const":
        return 1
    if kind == "categorical":
        return len(hp["vals"])
    if kind in ("int", "double", "log"):
        count = int(hp.get("count") or 1)
        if kind == "int":
            count = min(count, int(float(hp["maxval"]) - float(hp["minval"])) + 1)
        return count
    return grid_size(hp)


def grid_size(space: dict[str, Any]) -> int:
    return math.prod(_axis_size(space[name]) for name in space)


def _product(space: dict[str, Any]) -> list[tuple[Any, ...]]:
    return list(itertools.product(*(_axis(space[name]) for name in space)))


def grid_points(space: dict[str, Any]) -> list[dict[str, Any]]:
    names = sorted(space)
    ordered = {name: space[name] for name in names}
    return [dict(zip(names, combo, strict=True)) for combo in _product(ordered)]


def plan_initial_trials(
    searcher: dict[str, Any], space: dict[str, Any], rng: random.Random
) -> list[TrialRequest]:
    name = searcher["name"]
    concurrent = int(searcher.get("max_concurrent_trials") or 0)
    if name == "grid":
        size = grid_size(space)
        if size > MAX_INITIAL_TRIALS:
            raise InvalidArgument(
                f"the hyperparameter grid has {size} points; at most {MAX_INITIAL_TRIALS} are"
                " supported (lower the counts)"
            )
        points = grid_points(space)
        if concurrent > 0:
            points = points[:concurrent]
        return [TrialRequest(hparams=p, seed=rng.randint(0, MAX_SEED)) for p in points]
    if name == "single":
        count = 1
    else:
        count = int(searcher.get("max_trials") or 1)
        if concurrent > 0:
            count = min(count, concurrent)
        if count > MAX_INITIAL_TRIALS:
            raise InvalidArgument(
                f"the searcher would start {count} trials at once; at most {MAX_INITIAL_TRIALS}"
                " are supported (set max_concurrent_trials)"
            )
    return [
        TrialRequest(hparams=sample_hparams(space, rng), seed=rng.randint(0, MAX_SEED))
        for _ in range(count)
    ]
