"""The trainer's pure decisions: periods, lengths and Determined's config lengths, as tables."""

from __future__ import annotations

import pytest

from harness.pytorch._units import (
    Batch,
    Due,
    Epoch,
    TrainUnit,
    due_after,
    length_in_batches,
    period_ends,
    progress,
    searcher_max_length,
    unit_from_config,
)


@pytest.mark.parametrize(
    ("unit", "batches", "epoch_len", "ends"),
    [
        (Batch(10), 10, 7, True),
        (Batch(10), 15, 7, False),
        (Batch(10), 20, 7, True),
        (Batch([3, 5]), 3, 7, True),
        (Batch([3, 5]), 4, 7, False),
        (Epoch(1), 7, 7, True),
        (Epoch(1), 6, 7, False),
        (Epoch(2), 7, 7, False),
        (Epoch(2), 14, 7, True),
        (Epoch([1, 3]), 21, 7, True),
        (Epoch([1, 3]), 14, 7, False),
    ],
)
def test_period_ends(unit: TrainUnit, batches: int, epoch_len: int, ends: bool) -> None:
    assert period_ends(unit, batches, epoch_len) is ends


@pytest.mark.parametrize(
    ("unit", "epoch_len", "batches"), [(Batch(30), 7, 30), (Epoch(3), 7, 21), (Epoch(1), 1, 1)]
)
def test_length_in_batches(unit: TrainUnit, epoch_len: int, batches: int) -> None:
    assert length_in_batches(unit, epoch_len) == batches


@pytest.mark.parametrize("bad", [Batch([1, 2]), TrainUnit(3)])
def test_a_length_must_be_a_batch_or_epoch_count(bad: TrainUnit) -> None:
    with pytest.raises(TypeError, match="max_length"):
        length_in_batches(bad, 5)


@pytest.mark.parametrize("value", [0, -1, True, "3", 1.5])
def test_bad_unit_values_are_refused(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        Batch(value)  # type: ignore[arg-type]


PERIODS = {
    "epoch_len": 10,
    "total_batches": 30,
    "reporting_period": Batch(5),
    "validation_period": Epoch(1),
    "checkpoint_period": Batch(15),
}


@pytest.mark.parametrize(
    ("batches", "last_val", "last_ckpt", "due"),
    [
        (1, -1, -1, Due()),
        (5, -1, -1, Due(report=True)),
        (10, -1, -1, Due(report=True, validate=True)),
        (15, 10, -1, Due(report=True, checkpoint=True)),
        (15, 10, 15, Due(report=True)),  # just restored from the batch-15 checkpoint
        (20, 10, 15, Due(report=True, validate=True)),
        (29, 20, 15, Due()),
        (30, 20, 15, Due(done=True, report=True, validate=True, checkpoint=True)),
        (30, 30, 30, Due(done=True, report=True)),
    ],
)
def test_due_after(batches: int, last_val: int, last_ckpt: int, due: Due) -> None:
    got = due_after(batches, last_validation=last_val, last_checkpoint=last_ckpt, **PERIODS)
    assert got == due


def test_the_end_of_training_is_reported_even_off_every_period() -> None:
    got = due_after(
        7, epoch_len=100, total_batches=7, reporting_period=Batch(100),
        validation_period=Batch(1000), checkpoint_period=Batch(1000),
        last_validation=-1, last_checkpoint=-1,
    )  # fmt: skip
    assert got == Due(done=True, report=True, validate=True, checkpoint=True)


@pytest.mark.parametrize(("done", "total", "p"), [(0, 10, 0.0), (5, 10, 0.5), (12, 10, 1.0)])
def test_progress(done: int, total: int, p: float) -> None:
    assert progress(done, total) == p


@pytest.mark.parametrize(
    ("length", "gbs", "unit"),
    [
        ({"batches": 200}, None, Batch(200)),
        ({"epochs": 3}, None, Epoch(3)),
        ({"records": 640}, 32, Batch(20)),
        ({"records": 650}, 32, Batch(21)),
        (50, None, Batch(50)),
        (None, None, None),
        ({}, None, None),
    ],
)
def test_unit_from_config(length: object, gbs: int | None, unit: TrainUnit | None) -> None:
    assert unit_from_config(length, global_batch_size=gbs, records_per_epoch=None, what="x") == unit


@pytest.mark.parametrize(
    ("length", "message"),
    [
        ({"records": 64}, "global_batch_size"),
        ({"minutes": 3}, "unknown unit"),
        ({"batches": 0}, "positive"),
        ({"batches": 1, "epochs": 1}, "expected"),
        ("ten", "expected"),
    ],
)
def test_bad_config_lengths_are_named(length: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        unit_from_config(length, global_batch_size=None, records_per_epoch=None, what="x")


def test_searcher_max_length_reads_max_length_or_asha_max_time() -> None:
    assert searcher_max_length({"searcher": {"max_length": {"batches": 5}}}) == {"batches": 5}
    asha = {"searcher": {"time_metric": "batches", "max_time": 40}}
    assert searcher_max_length(asha) == {"batches": 40}
    assert searcher_max_length({"searcher": {}}) is None
