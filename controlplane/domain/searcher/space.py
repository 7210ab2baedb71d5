"""Hyperparameter spaces (reference §4.3, §4.4, §5.4): random sampling and the search grid.

Spaces are the expanded config dicts: a leaf is a mapping with `type` (const, int, double, log,
categorical); a mapping without `type` nests. Names are visited in sorted order everywhere, so a
seed gives the same values whatever order the YAML had.
"""

from __future__ import annotations

import math
import random
from typing import Any

from .errors import SearcherConfigError

MAX_SEED = 2**31
"""Trial seeds are below 2**31, as Determined's."""

Path = tuple[str, ...]


def is_leaf(hp: Any) -> bool:
    return isinstance(hp, dict) and "type" in hp


def sample_value(hp: dict[str, Any], rng: random.Random) -> Any:
    kind = hp["type"]
    if kind == "const":
        return hp.get("val")
    if kind == "int":
        return rng.randint(int(hp["minval"]), int(hp["maxval"]))
    if kind == "double":
        return rng.uniform(float(hp["minval"]), float(hp["maxval"]))
    if kind == "log":
        base = float(hp.get("base", 10.0))
        return base ** rng.uniform(float(hp["minval"]), float(hp["maxval"]))
    if kind == "categorical":
        return rng.choice(list(hp["vals"]))
    raise SearcherConfigError(f"unknown hyperparameter type {kind!r}")


def sample(space: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One random point; nested maps are sampled recursively."""
    return {
        name: sample_value(hp, rng) if is_leaf(hp) else sample(hp, rng)
        for name, hp in sorted(space.items())
    }


def new_seed(rng: random.Random) -> int:
    return rng.randrange(MAX_SEED)


def leaves(space: dict[str, Any], prefix: Path = ()) -> list[tuple[Path, Any]]:
    """(path, leaf) in sorted order; an empty nested map is a leaf of its own (value {})."""
    out: list[tuple[Path, Any]] = []
    for name in sorted(space):
        hp = space[name]
        path = (*prefix, name)
        if is_leaf(hp) or not isinstance(hp, dict):
            out.append((path, hp))
        elif not hp:
            out.append((path, {"type": "const", "val": {}}))
        else:
            out.extend(leaves(hp, path))
    return out


def set_path(target: dict[str, Any], path: Path, value: Any) -> None:
    for name in path[:-1]:
        target = target.setdefault(name, {})
    target[path[-1]] = value


def _round_half_away(value: float) -> int:
    """Go's math.Round (Python's round() rounds half to even)."""
    return math.floor(abs(value) + 0.5) * (1 if value >= 0 else -1)


def _grid(lo: float, hi: float, count: int) -> list[float]:
    if count == 1:
        return [(hi + lo) / 2.0]
    delta = (hi - lo) / (count - 1)
    return [lo + i * delta for i in range(count)]


def _int_count(hp: dict[str, Any]) -> int:
    return min(int(hp["count"]), int(hp["maxval"]) - int(hp["minval"]) + 1)


def _require_count(path: Path, hp: dict[str, Any]) -> int:
    count = hp.get("count")
    if count is None:
        raise SearcherConfigError(
            f"hyperparameters.{'.'.join(path)}.count: grid search is in use but count was not"
            " provided"
        )
    return int(count)


def axis_size(path: Path, hp: dict[str, Any]) -> int:
    kind = hp["type"]
    if kind == "const":
        return 1
    if kind == "categorical":
        return len(hp["vals"])
    _require_count(path, hp)
    return _int_count(hp) if kind == "int" else int(hp["count"])


def axis(path: Path, hp: dict[str, Any]) -> list[Any]:
    """The values one leaf takes in the grid (reference §4.4)."""
    kind = hp["type"]
    if kind == "const":
        return [hp.get("val")]
    if kind == "categorical":
        return list(hp["vals"])
    _require_count(path, hp)
    if kind == "int":
        lo, hi = int(hp["minval"]), int(hp["maxval"])
        return [_round_half_away(v) for v in _grid(float(lo), float(hi), _int_count(hp))]
    points = _grid(float(hp["minval"]), float(hp["maxval"]), int(hp["count"]))
    if kind == "log":
        base = float(hp.get("base", 10.0))
        return [math.pow(base, p) for p in points]
    return points


def grid_size(space: dict[str, Any]) -> int:
    """The number of grid points, computed without building the grid."""
    return math.prod(axis_size(path, hp) for path, hp in leaves(space))


class Grid:
    """The cartesian product of the axes, last axis fastest, addressed by index.

    Points are computed from their index (mixed radix), so a 10**5-point grid costs nothing until
    its points are asked for and a snapshot only keeps a position.
    """

    def __init__(self, space: dict[str, Any]) -> None:
        self._axes = [(path, axis(path, hp)) for path, hp in leaves(space)]
        self.size = math.prod(len(values) for _, values in self._axes)

    def point(self, index: int) -> dict[str, Any]:
        if not 0 <= index < self.size:
            raise IndexError(index)
        chosen: list[tuple[Path, Any]] = []
        for path, values in reversed(self._axes):
            index, digit = divmod(index, len(values))
            chosen.append((path, values[digit]))
        out: dict[str, Any] = {}
        for path, value in reversed(chosen):
            set_path(out, path, value)
        return out
