"""A seeded random generator whose state fits in a JSON snapshot."""

from __future__ import annotations

import random
from typing import Any


def new_rng(seed: int) -> random.Random:
    return random.Random(seed)


def rng_state(rng: random.Random) -> list[Any]:
    version, internal, gauss_next = rng.getstate()
    return [version, list(internal), gauss_next]


def rng_from_state(state: list[Any]) -> random.Random:
    rng = random.Random()
    rng.setstate((state[0], tuple(state[1]), state[2]))
    return rng
