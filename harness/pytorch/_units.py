"""Training lengths and periods (``Batch``, ``Epoch``) and the trainer's pure decisions.

Everything here is arithmetic on counters: which periods end after a batch, how many batches a
length is, how Determined's legacy ``searcher.max_length`` / ``min_validation_period`` map onto
``Batch``/``Epoch``. No torch, no I/O; the trainer (``_trainer.py``) only acts on the answers.
"""

from __future__ import annotations

import sys
from collections.abc import Container
from dataclasses import dataclass
from typing import Any


class TrainUnit:
    """A length or period in batches or epochs: an int (every N) or a container (at those)."""

    def __init__(self, value: int | Container[int]) -> None:
        if isinstance(value, (bool, str, bytes)) or not isinstance(value, (int, Container)):
            raise TypeError(f"{type(self).__name__} takes an int or a container of ints")
        if isinstance(value, int) and value < 1:
            raise ValueError(f"{type(self).__name__}({value}): the value must be at least 1")
        self.value = value

    def should_stop(self, step_num: int) -> bool:
        """Whether a period of this unit ends at ``step_num`` (1-based count of units done)."""
        if isinstance(self.value, int):
            return step_num % self.value == 0
        return step_num in self.value

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.value == self.value  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.value)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"


class Batch(TrainUnit):
    """A number of batches (optimizer steps of the whole trial, not per worker)."""


class Epoch(TrainUnit):
    """A number of passes over the training data loader."""


NEVER = Batch(sys.maxsize)


def period_ends(unit: TrainUnit, batches_trained: int, epoch_len: int) -> bool:
    """Whether ``unit``'s period ends right after batch number ``batches_trained`` (1-based)."""
    if isinstance(unit, Epoch):
        epochs, rest = divmod(batches_trained, epoch_len)
        return rest == 0 and unit.should_stop(epochs)
    return unit.should_stop(batches_trained)


def length_in_batches(unit: TrainUnit, epoch_len: int) -> int:
    """How many batches a training length is (``Batch(n)`` or ``Epoch(n)`` with an int)."""
    if not isinstance(unit, (Batch, Epoch)) or not isinstance(unit.value, int):
        raise TypeError(f"max_length must be Batch(int) or Epoch(int), not {unit!r}")
    return unit.value * epoch_len if isinstance(unit, Epoch) else unit.value


@dataclass(frozen=True)
class Due:
    """What the trainer does after a batch."""

    done: bool = False
    report: bool = False
    validate: bool = False
    checkpoint: bool = False

    @property
    def any(self) -> bool:
        return self.done or self.report or self.validate or self.checkpoint


def due_after(
    batches_trained: int,
    *,
    epoch_len: int,
    total_batches: int,
    reporting_period: TrainUnit,
    validation_period: TrainUnit,
    checkpoint_period: TrainUnit,
    last_validation: int,
    last_checkpoint: int,
) -> Due:
    """The periods that end after batch ``batches_trained``; the end of training ends them all.

    A validation or checkpoint already taken at this batch (``last_*``, e.g. just restored from
    a checkpoint) is not taken again.
    """
    done = batches_trained >= total_batches
    validate = done or period_ends(validation_period, batches_trained, epoch_len)
    checkpoint = done or period_ends(checkpoint_period, batches_trained, epoch_len)
    return Due(
        done=done,
        report=done or period_ends(reporting_period, batches_trained, epoch_len),
        validate=validate and last_validation != batches_trained,
        checkpoint=checkpoint and last_checkpoint != batches_trained,
    )


def progress(batches_trained: int, total_batches: int) -> float:
    return min(1.0, batches_trained / total_batches) if total_batches > 0 else 1.0


# --- Determined's experiment-config lengths (the legacy `model_def:Trial` entrypoint) --------


def unit_from_config(
    length: Any, *, global_batch_size: int | None, records_per_epoch: int | None, what: str
) -> TrainUnit | None:
    """``{batches: n}`` / ``{epochs: n}`` / ``{records: n}`` (or a bare int: batches) as a unit.

    Records become batches of ``global_batch_size`` (rounded up, at least 1), as Determined does.
    ``None`` or an empty mapping means "not configured".
    """
    if length is None or length == {}:
        return None
    if isinstance(length, bool):
        raise ValueError(f"{what}: expected {{batches|epochs|records: N}}, got {length!r}")
    if isinstance(length, int):
        return Batch(length)
    if not isinstance(length, dict) or len(length) != 1:
        raise ValueError(f"{what}: expected {{batches|epochs|records: N}}, got {length!r}")
    ((unit, value),) = length.items()
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what}: {unit} must be a positive integer, got {value!r}")
    if unit == "batches":
        return Batch(value)
    if unit == "epochs":
        return Epoch(value)
    if unit == "records":
        if not global_batch_size:
            raise ValueError(f"{what} in records needs hyperparameters.global_batch_size")
        return Batch(max(1, -(-value // global_batch_size)))
    raise ValueError(f"{what}: unknown unit {unit!r} (batches, epochs or records)")


def searcher_max_length(config: dict[str, Any]) -> Any:
    """``searcher.max_length``, or adaptive ASHA's ``max_time``/``time_metric`` pair."""
    searcher = config.get("searcher") or {}
    if searcher.get("max_length") is not None:
        return searcher["max_length"]
    if searcher.get("time_metric") and searcher.get("max_time"):
        return {searcher["time_metric"]: searcher["max_time"]}
    return None
