"""Stopping ASHA as Determined 0.38 (reference §4.5: asha_stopping_test's cases)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.domain.searcher import (
    Close,
    Create,
    MetricMissing,
    Op,
    Shutdown,
    TrialClosed,
    TrialExitedEarly,
    ValidationReported,
    make_searcher,
)
from controlplane.domain.searcher.rungs import rung_units

SPACE = {"x": {"type": "double", "minval": 0, "maxval": 1}}


def _config(**extra: Any) -> dict[str, Any]:
    return {
        "name": "async_halving",
        "metric": "loss",
        "time_metric": "batches",
        "num_rungs": 3,
        "divisor": 3,
        "max_time": 900,
        "max_trials": 10,
        "max_concurrent_trials": 3,
        **extra,
    }


def _report(rid: str, loss: float, batches: int) -> ValidationReported:
    return ValidationReported(rid, {"loss": loss, "batches": batches})


@pytest.mark.parametrize(
    ("rungs", "max_time", "divisor", "units"),
    [
        (3, 900, 3, [100, 300, 900]),
        (4, 10, 2, [1, 2, 5, 10]),
        (3, 2, 4, [1, 1, 2]),
        (1, 7, 4, [7]),
        (2, 10, 2.5, [4, 10]),
    ],
)
def test_rung_units(rungs: int, max_time: int, divisor: float, units: list[int]) -> None:
    assert rung_units(rungs, divisor, max_time) == units


def test_ten_trials_with_worsening_metrics_one_reaches_900_nine_stop_at_100() -> None:
    searcher = make_searcher(_config(), SPACE, 1)
    initial = searcher.initial_operations()
    assert len(initial) == 3
    pending = [op.request_id for op in initial]
    stopped_at: dict[str, int] = {}
    loss = 0.0
    ended: Shutdown | None = None
    while pending:
        rid = pending.pop(0)
        loss += 1
        for batches in range(100, 1000, 100):
            ops = searcher.on_event(_report(rid, loss, batches))
            pending += [op.request_id for op in ops if isinstance(op, Create)]
            if Close(rid) in ops:
                stopped_at[rid] = batches
                break
        for op in searcher.on_event(TrialClosed(rid)):
            ended = op if isinstance(op, Shutdown) else ended
    assert sorted(stopped_at.values()) == [100] * 9 + [900]
    assert ended == Shutdown(cancel=False, failure=False)


@pytest.mark.parametrize(
    ("second_loss", "second_continues"),
    [(0.4, True), (0.6, False), (0.5, True)],  # a tie is placed before the old value
)
def test_one_rung_step(second_loss: float, second_continues: bool) -> None:
    searcher = make_searcher(_config(num_rungs=2, max_time=3, divisor=3), SPACE, 1)
    first, second, _ = (op.request_id for op in searcher.initial_operations())
    assert searcher.on_event(_report(first, 0.5, 1)) == []  # alone in rung 0: continues
    ops = searcher.on_event(_report(second, second_loss, 1))
    assert (Close(second) not in ops) == second_continues


def test_a_report_can_cross_several_rungs() -> None:
    searcher = make_searcher(_config(), SPACE, 1)
    rid = searcher.initial_operations()[0].request_id  # type: ignore[union-attr]
    ops = searcher.on_event(_report(rid, 1.0, 900))
    assert ops[0] == Close(rid)  # best of rungs 0 and 1, then done at the top rung
    assert isinstance(ops[1], Create)


def test_larger_is_better_flips_the_ranking() -> None:
    searcher = make_searcher(_config(smaller_is_better=False), SPACE, 1)
    first, second, _ = (op.request_id for op in searcher.initial_operations())
    searcher.on_event(_report(first, 0.5, 100))
    assert Close(second) not in searcher.on_event(_report(second, 0.9, 100))


def test_invalid_hp_is_removed_from_the_rungs_and_replaced_even_when_the_budget_is_used() -> None:
    searcher = make_searcher(_config(max_trials=2, max_concurrent_trials=2), SPACE, 1)
    first, second = (op.request_id for op in searcher.initial_operations())
    searcher.on_event(_report(first, 0.1, 100))
    ops = searcher.on_event(TrialExitedEarly(first, "INVALID_HP"))
    assert [type(op) for op in ops] == [Create]
    # The InvalidHP trial's 0.1 is gone: a 0.5 is now the best of rung 0 and continues.
    assert searcher.on_event(_report(second, 0.5, 100)) == []


def test_an_errored_trial_ranks_last_and_is_replaced_while_there_is_room() -> None:
    searcher = make_searcher(_config(max_trials=3, max_concurrent_trials=2), SPACE, 1)
    first, second = (op.request_id for op in searcher.initial_operations())
    searcher.on_event(_report(first, 1.0, 100))
    ops = searcher.on_event(TrialExitedEarly(first, "ERRORED"))
    assert [type(op) for op in ops] == [Create]
    third = ops[0].request_id  # type: ignore[union-attr]
    # Rung 0 holds [1.0, MAX]: 5.0 ranks 1 of 3, keep = 1: stopped, and no room is left.
    assert searcher.on_event(_report(second, 5.0, 100)) == [Close(second)]
    assert searcher.on_event(TrialExitedEarly(third, "USER_CANCELED")) == []


def test_a_trial_that_ends_on_its_own_is_not_replaced() -> None:
    searcher = make_searcher(_config(), SPACE, 1)
    rid = searcher.initial_operations()[0].request_id  # type: ignore[union-attr]
    assert searcher.on_event(TrialClosed(rid)) == []


@pytest.mark.parametrize(
    "metrics",
    [
        {"batches": 100},
        {"loss": 1.0},
        {"loss": "low", "batches": 100},
        {"loss": True, "batches": 1},
    ],
)
def test_a_missing_or_non_numeric_metric_is_an_error_and_changes_nothing(
    metrics: dict[str, Any],
) -> None:
    searcher = make_searcher(_config(), SPACE, 1)
    rid = searcher.initial_operations()[0].request_id  # type: ignore[union-attr]
    before = searcher.snapshot()
    with pytest.raises(MetricMissing):
        searcher.on_event(ValidationReported(rid, metrics))
    assert searcher.snapshot() == before


def test_nan_ranks_last_and_the_snapshot_stays_json() -> None:
    searcher = make_searcher(_config(), SPACE, 1)
    first, second, _ = (op.request_id for op in searcher.initial_operations())
    searcher.on_event(_report(first, float("nan"), 100))
    assert searcher.on_event(_report(second, 1e300, 100)) == []  # better than NaN: continues
    import json

    json.dumps(searcher.snapshot(), allow_nan=False)


def test_initial_trials_without_a_concurrency_limit() -> None:
    # clamp(1, divisor^(R-1), max_trials)
    assert len(make_searcher(_config(max_concurrent_trials=0), SPACE, 1).initial_operations()) == 9
    small = _config(max_concurrent_trials=0, max_trials=4)
    assert len(make_searcher(small, SPACE, 1).initial_operations()) == 4


def test_progress_counts_rung_zero_with_a_20_percent_overhead() -> None:
    searcher = make_searcher(_config(max_trials=3, max_concurrent_trials=3), SPACE, 1)
    ids = [op.request_id for op in searcher.initial_operations()]
    assert searcher.progress() == 0.0
    ops: list[Op] = []
    for loss, rid in enumerate(ids):
        ops += searcher.on_event(_report(rid, float(loss), 100))
    assert searcher.progress() == pytest.approx(3 / 3.6)
    searcher.on_event(TrialClosed(ids[1]))
    searcher.on_event(TrialClosed(ids[2]))
    assert searcher.progress() == pytest.approx(3 / 3.6)  # 2/3 < 3/3.6
