"""Rungs of successive halving: sorted metrics per rung (reference §4.5)."""

from __future__ import annotations

import bisect
import math
import sys
from typing import Any

from .errors import MetricMissing

EXITED_METRIC = sys.float_info.max
"""What a trial that exited early (not InvalidHP) ranks with: last."""


def rung_units(num_rungs: int, divisor: float, max_time: int) -> list[int]:
    """Rung i needs max(1, floor(max_time / divisor**(R-1-i))) time units."""
    return [
        max(int(float(max_time) / math.pow(divisor, num_rungs - i - 1)), 1)
        for i in range(num_rungs)
    ]


def number(metrics: dict[str, Any], key: str, what: str) -> float:
    value = metrics.get(key)
    if value is None:
        raise MetricMissing(
            f"the validation metrics have no {what} {key!r} (reported: {sorted(metrics)[:20]})"
        )
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MetricMissing(f"the {what} {key!r} is not a number: {value!r}")
    return float(value)


def ranked_value(value: float, smaller_is_better: bool) -> float:
    """The value to sort ascending by; NaN ranks last and infinities stay JSON-safe."""
    if math.isnan(value):
        return EXITED_METRIC
    if not smaller_is_better:
        value = -value
    return max(-EXITED_METRIC, min(EXITED_METRIC, value))


def ladder(reached: list[tuple[int, float, dict[str, Any]]]) -> list[tuple[dict[str, Any], float]]:
    """Each trial's (time units of the highest rung it reached, ranked value there, point) as
    (point, score) for the model: the further a trial went the better, then by its result there.

    The score is the trial's place in that order: TPE only compares scores, and results of
    different rungs are not comparable numbers (a metric is better after more training)."""
    ordered = sorted(reached, key=lambda entry: (-entry[0], entry[1]))
    return [(point, float(place)) for place, (_, _, point) in enumerate(ordered)]


class Rung:
    def __init__(self, units: int, metrics: list[tuple[str, float]] | None = None) -> None:
        self.units = units
        self.metrics: list[tuple[str, float]] = metrics or []

    def insert(self, request_id: str, value: float) -> int:
        """Insert before equal values; return the rank (0 is best)."""
        index = bisect.bisect_left([v for _, v in self.metrics], value)
        self.metrics.insert(index, (request_id, value))
        return index

    def remove(self, request_id: str) -> None:
        for index, (rid, _) in enumerate(self.metrics):
            if rid == request_id:
                del self.metrics[index]
                return

    def rank(self, request_id: str) -> int:
        for index, (rid, _) in enumerate(self.metrics):
            if rid == request_id:
                return index
        raise KeyError(request_id)

    def keep(self, divisor: float) -> int:
        """How many of the rung go on: the top 1/divisor, at least one."""
        return max(int(len(self.metrics) / divisor), 1)

    def snapshot(self) -> dict[str, Any]:
        return {"units": self.units, "metrics": [[rid, v] for rid, v in self.metrics]}

    @classmethod
    def from_snapshot(cls, state: dict[str, Any]) -> Rung:
        return cls(int(state["units"]), [(str(rid), float(v)) for rid, v in state["metrics"]])
