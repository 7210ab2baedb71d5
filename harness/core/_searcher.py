"""SearcherContext as in Determined 0.38: one operation, of the config's searcher.max_length.

0.38 sends nothing for searcher operations: ``operations()`` yields a single op whose length is
``searcher.max_length``; ``report_completed`` is a no-op (validation metrics reach the searcher
through ``report_validation_metrics``); ``report_progress`` reports the fraction done.
"""

from __future__ import annotations

import enum
import math
import warnings
from collections.abc import Iterator
from typing import Any

from harness.core._distributed import DistributedContext
from harness.core._train import TrainContext


class Unit(enum.Enum):
    EPOCHS = "UNIT_EPOCHS"
    RECORDS = "UNIT_RECORDS"
    BATCHES = "UNIT_BATCHES"


class SearcherMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"


def max_length_of(config: dict[str, Any]) -> tuple[int, Unit | None] | None:
    """(length, unit) from ``searcher.max_length``: an int, or {batches|records|epochs: N}."""
    raw = (config.get("searcher") or {}).get("max_length")
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw, None
    if isinstance(raw, dict) and len(raw) == 1:
        ((unit, value),) = raw.items()
        return int(value), Unit[unit.upper()]
    raise ValueError(f"searcher.max_length must be an integer or {{unit: N}}, got {raw!r}")


class SearcherOperation:
    """Train until ``length`` (absolute, not incremental), validate, report."""

    def __init__(self, train: TrainContext, length: int, is_chief: bool) -> None:
        self._train = train
        self._length = length
        self._is_chief = is_chief
        self._completed = False

    @property
    def length(self) -> int:
        return self._length

    def report_progress(self, length: float) -> None:
        if not self._is_chief:
            raise RuntimeError("only the chief may report progress")
        self._train.report_progress(min(1.0, max(0.0, length / self._length)))

    def report_completed(self, searcher_metric: Any) -> None:
        if not self._is_chief:
            raise RuntimeError("only the chief may report an operation completed")
        if self._completed:
            raise RuntimeError("this operation was already reported completed")
        if isinstance(searcher_metric, float) and math.isnan(searcher_metric):
            raise ValueError("the searcher metric is NaN")
        self._completed = True


class SearcherContext:
    def __init__(
        self,
        train: TrainContext,
        dist: DistributedContext,
        length: int,
        units: Unit | None = None,
    ) -> None:
        self._train = train
        self._dist = dist
        self._length = length
        self._units = units

    def operations(
        self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief, auto_ack: bool = True
    ) -> Iterator[SearcherOperation]:
        warnings.warn(
            "SearcherContext.operations() is deprecated (Determined 0.38): train for "
            "searcher.max_length from the experiment config instead",
            FutureWarning,
            stacklevel=2,
        )
        yield SearcherOperation(self._train, self._length, self._dist.rank == 0)

    def acknowledge_out_of_ops(self) -> None:
        return None

    def get_configured_units(self) -> Unit | None:
        return self._units
