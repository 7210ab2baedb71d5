"""SearcherContext as in Determined 0.38: one operation, of the config's searcher.max_length.

0.38 sends nothing for searcher operations: ``operations()`` yields a single op whose length is
``searcher.max_length`` (a FutureWarning says the API is deprecated); ``report_completed``
sends nothing (validation metrics reach the searcher through ``report_validation_metrics``);
``op.report_progress`` reports the fraction done. In ``SearcherMode.WorkersAskChief`` every
worker iterates in step: the chief broadcasts each op's length, then None at the end.
"""

from __future__ import annotations

import enum
import logging
import warnings
from collections.abc import Iterator
from typing import Any

from harness.core._distributed import DistributedContext
from harness.core._train import TrainContext

logger = logging.getLogger("harness.core")

DEPRECATED = (
    "SearcherContext.operations() was deprecated in Determined 0.38.0 and will be removed in a "
    "future version.  Instead, you should set your training length directly in your training "
    "code."
)
MISSING = (
    "SearcherContext was not created because your experiment config does not have the "
    "searcher.max_length set.  Both the searcher.max_length and the SearcherContext are "
    "deprecated.  Instead, you should specify your training length directly in your training "
    "code and avoid all calls to core_context.searcher."
)


class Unit(enum.Enum):
    EPOCHS = "EPOCHS"
    RECORDS = "RECORDS"
    BATCHES = "BATCHES"


class SearcherMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHEIF_ONLY"  # sic: Determined's value


_UNITS = {"records": Unit.RECORDS, "epochs": Unit.EPOCHS, "batches": Unit.BATCHES}


def parse_max_length(config: dict[str, Any]) -> int | None:
    """``searcher.max_length``: an int, or ``{batches|records|epochs: N}``; None when absent."""
    raw = (config.get("searcher") or {}).get("max_length")
    if raw is None:
        return None
    if isinstance(raw, dict):
        if not raw:
            return None
        raw = next(iter(raw.values()))
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ValueError(f"searcher.max_length must be an integer or {{unit: N}}, got {raw!r}")
    return raw


def parse_units(config: dict[str, Any]) -> Unit | None:
    searcher = config.get("searcher") or {}
    if "unit" in searcher:
        return _UNITS.get(searcher["unit"])
    raw = searcher.get("max_length")
    if isinstance(raw, dict) and len(raw) == 1:
        return _UNITS.get(next(iter(raw)))
    return None


def max_length_of(config: dict[str, Any]) -> tuple[int, Unit | None] | None:
    """(length, unit), or None when the config has no searcher.max_length."""
    length = parse_max_length(config)
    return None if length is None else (length, parse_units(config))


class SearcherOperation:
    """Train until ``length`` (absolute, not incremental), validate, report."""

    def __init__(self, train: TrainContext | None, length: int, is_chief: bool) -> None:
        self._train = train
        self._length = length
        self._is_chief = is_chief
        self._completed = False

    @property
    def length(self) -> int:
        return self._length

    def report_progress(self, length: float) -> None:
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_progress() from the chief worker")
        if self._completed and length != self._length:
            raise RuntimeError("you must not call op.report_progress() after op.report_completed()")
        progress = min(1.0, max(0.0, length / self._length)) if self._length else 1.0
        if self._train is None:
            logger.info("progress report: %s/%s", length, self._length)
        else:
            self._train.report_progress(progress)

    def report_completed(self, searcher_metric: Any) -> None:
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_completed() from the chief worker")
        if self._completed:
            raise RuntimeError("you may only call op.report_completed() once")
        self._completed = True
        logger.info("SearcherOperation complete: searcher_metric=%r", searcher_metric)


class SearcherContext:
    """Deprecated in Determined 0.38: one op of ``searcher.max_length``; nothing is sent."""

    def __init__(
        self,
        train: TrainContext | None,
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
        warnings.warn(DEPRECATED, FutureWarning, stacklevel=2)
        yield from self._operations(SearcherMode(searcher_mode))

    def _operations(self, mode: SearcherMode) -> Iterator[SearcherOperation]:
        asks_chief = mode is SearcherMode.WorkersAskChief
        if self._dist.rank == 0:
            op = SearcherOperation(self._train, self._length, True)
            if asks_chief:
                self._dist.broadcast(op.length)
            yield op
            if not op._completed:
                raise RuntimeError("you must call op.report_completed() on each operation")
            if asks_chief:
                self._dist.broadcast(None)
            return
        if not asks_chief:
            raise RuntimeError(
                "you cannot call searcher.operations(searcher_mode=ChiefOnly) "
                "from a non-chief worker."
            )
        while True:
            length = self._dist.broadcast(None)
            if length is None:
                return
            yield SearcherOperation(self._train, length, False)

    def acknowledge_out_of_ops(self) -> None:
        """Ignored, as in Determined 0.38."""
        return None

    def get_configured_units(self) -> Unit | None:
        return self._units


class DummySearcherContext(SearcherContext):
    """Off-cluster: one op of length 1 (Determined's default); progress is logged."""

    def __init__(self, dist: DistributedContext, length: int = 1) -> None:
        super().__init__(None, dist, length, Unit.EPOCHS)


class SearcherContextMissing(SearcherContext):
    """On a cluster, a config without searcher.max_length: every call explains why."""

    def __init__(self) -> None:
        pass

    def operations(
        self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief, auto_ack: bool = True
    ) -> Iterator[SearcherOperation]:
        raise ValueError(MISSING)

    def acknowledge_out_of_ops(self) -> None:
        raise ValueError(MISSING)

    def get_configured_units(self) -> Unit | None:
        raise ValueError(MISSING)


class DummySearcherOperation(SearcherOperation):
    """Off-cluster op: progress and completion are logged."""

    def __init__(self, length: int, is_chief: bool) -> None:
        super().__init__(None, length, is_chief)
