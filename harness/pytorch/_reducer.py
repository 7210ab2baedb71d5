"""Metric reducers (Determined's ``pytorch.Reducer``, ``pytorch.MetricReducer`` and
``context.wrap_reducer``).

- ``PyTorchTrial.evaluation_reducer()`` names how ``evaluate_batch``'s metrics combine over the
  validation set: one ``Reducer`` for all, or one per metric name (AVG where not named). AVG is
  the mean weighted by the batches' lengths; SUM, MAX and MIN act on the values of all batches of
  all workers.
- ``context.wrap_reducer(reducer, name=None, for_training=True, for_validation=True)`` registers a
  ``MetricReducer`` (or a plain function of the list of every ``update()`` value) that the
  trainer resets before each training report period and each validation, and reduces at its
  end: ``per_slot_reduce()`` on every worker, ``cross_slot_reduce()`` of all of them, the result
  merged into the reported metrics (under ``name``, or a dict of metrics when no name).
"""

from __future__ import annotations

import abc
import enum
import itertools
from collections.abc import Callable
from typing import Any


class Reducer(enum.Enum):
    """How a validation metric combines over batches (``PyTorchTrial.evaluation_reducer``)."""

    AVG = 1
    SUM = 2
    MAX = 3
    MIN = 4


class MetricReducer(metaclass=abc.ABCMeta):
    """A distributed-aware metric: the user's ``update(...)`` collects values on each worker;
    ``per_slot_reduce()`` turns them into one picklable value per worker; ``cross_slot_reduce()``
    combines the workers' values (a list, in rank order) into the metric, or a dict of metrics
    when wrapped without a name. ``reset()`` starts a new period."""

    @abc.abstractmethod
    def reset(self) -> None: ...

    @abc.abstractmethod
    def per_slot_reduce(self) -> Any: ...

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any: ...


class _FunctionReducer(MetricReducer):
    """A function of every value ``update()`` received, in batch order across the workers (the
    workers' lists are interleaved, undoing the sharding of the data)."""

    _MISSING = object()

    def __init__(self, fn: Callable[[list[Any]], Any]) -> None:
        self.fn = fn
        self.values: list[Any] = []

    def reset(self) -> None:
        self.values = []

    def update(self, value: Any) -> None:
        self.values.append(value)

    def per_slot_reduce(self) -> Any:
        return self.values

    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        rows = itertools.zip_longest(*per_slot_metrics, fillvalue=self._MISSING)
        return self.fn([v for row in rows for v in row if v is not self._MISSING])


class _Wrapped:
    def __init__(
        self, reducer: MetricReducer, name: str | None, for_training: bool, for_validation: bool
    ) -> None:
        self.reducer = reducer
        self.name = name
        self.for_training = for_training
        self.for_validation = for_validation

    def _call(self, what: str, *args: Any) -> Any:
        try:
            return getattr(self.reducer, what)(*args)
        except Exception as exc:  # name the reducer: the stack alone does not
            raise ValueError(
                f"reducer of type {type(self.reducer).__name__} for name={self.name!r} failed in "
                f"a call to {what}()"
            ) from exc


class Reducers:
    """The reducers a trial context wrapped."""

    def __init__(self) -> None:
        self.wrapped: list[_Wrapped] = []

    def wrap(
        self, reducer: Any, name: str | None, for_training: bool, for_validation: bool
    ) -> MetricReducer:
        if any(w.reducer is reducer for w in self.wrapped):
            raise AssertionError(
                f"the same reducer of type {type(reducer).__name__} was wrapped twice"
            )
        if not isinstance(reducer, MetricReducer):
            if not callable(reducer):
                raise AssertionError(
                    f"wrap_reducer() takes a function or a pytorch.MetricReducer, not "
                    f"{type(reducer).__name__}"
                )
            reducer = _FunctionReducer(reducer)
        self.wrapped.append(_Wrapped(reducer, name, for_training, for_validation))
        return reducer

    def reset(self, training: bool | None = None) -> None:
        """Reset all reducers, or those of the training (validation) period only."""
        for w in self.wrapped if training is None else self.for_period(training):
            w._call("reset")

    def for_period(self, training: bool) -> list[_Wrapped]:
        return [w for w in self.wrapped if (w.for_training if training else w.for_validation)]

    @staticmethod
    def cross_slot(reducables: list[_Wrapped], gathered: list[list[Any]]) -> dict[str, Any]:
        """``gathered``: each worker's per-slot values (in ``reducables``' order)."""
        metrics: dict[str, Any] = {}
        per_reducer = zip(*gathered) if gathered else iter(())  # noqa: B905 (one per reducer)
        for w, per_slot in zip(reducables, per_reducer):  # noqa: B905 (same lengths)
            value = w._call("cross_slot_reduce", list(per_slot))
            if w.name is None:
                if not isinstance(value, dict):
                    raise ValueError(
                        f"reducer of type {type(w.reducer).__name__} was wrapped without a name "
                        f"and must return a dict of metrics, not {type(value).__name__}"
                    )
                metrics.update(value)
            else:
                if isinstance(value, dict):
                    raise ValueError(
                        f"reducer {w.name!r} returned a dict; wrap it without a name to report "
                        "several metrics"
                    )
                metrics[w.name] = value
        return metrics


def _number(value: Any) -> float | None:
    if hasattr(value, "item") and getattr(value, "numel", lambda: 1)() == 1:
        value = value.item()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def reduce_rows(
    rows: list[dict[str, Any]], weights: list[float], spec: Reducer | dict[str, Reducer]
) -> dict[str, Any]:
    """Combine per-batch metrics by ``spec``: AVG the weighted mean, SUM/MAX/MIN of the values;
    values that are not numbers keep the last one."""
    totals: dict[str, list[tuple[float, float]]] = {}
    out: dict[str, Any] = {}
    for row, weight in zip(rows, weights):  # noqa: B905 (one weight a row)
        for key, value in row.items():
            number = _number(value)
            if number is None:
                out[key] = value
            else:
                totals.setdefault(key, []).append((number, weight))
    for key, pairs in totals.items():
        how = spec if isinstance(spec, Reducer) else Reducer(spec.get(key, Reducer.AVG))
        values = [v for v, _ in pairs]
        if how is Reducer.SUM:
            out[key] = sum(values)
        elif how is Reducer.MAX:
            out[key] = max(values)
        elif how is Reducer.MIN:
            out[key] = min(values)
        else:
            total = sum(w for _, w in pairs)
            out[key] = sum(v * w for v, w in pairs) / total if total else sum(values) / len(values)
    return out
