"""Rules every searcher shares (reference §4.2, §4.3): shutdown, replacements, progress."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.domain.searcher import (
    Create,
    Shutdown,
    TrialClosed,
    TrialCreated,
    TrialExitedEarly,
    TrialProgress,
    ValidationReported,
    make_searcher,
)

SPACE = {"x": {"type": "int", "minval": 0, "maxval": 9, "count": 10}}


def _random(max_trials: int, concurrent: int = 16) -> dict[str, Any]:
    return {
        "name": "random",
        "metric": "m",
        "max_trials": max_trials,
        "max_concurrent_trials": concurrent,
    }


@pytest.mark.parametrize(
    ("reasons", "shutdown"),
    [
        (["USER_CANCELED", "USER_CANCELED"], Shutdown(cancel=True, failure=False)),
        (["ERRORED", "ERRORED"], Shutdown(cancel=False, failure=True)),
        (["ERRORED", "USER_CANCELED"], Shutdown(cancel=False, failure=False)),
        (["ERRORED", None], Shutdown(cancel=False, failure=False)),
        ([None, None], Shutdown(cancel=False, failure=False)),
    ],
)
def test_shutdown_says_cancel_or_failure_only_when_every_trial_did(
    reasons: list[str | None], shutdown: Shutdown
) -> None:
    searcher = make_searcher(_random(2), SPACE, 3)
    ids = [op.request_id for op in searcher.initial_operations()]
    ops = []
    for rid, reason in zip(ids, reasons, strict=True):
        if reason:
            ops += searcher.on_event(TrialExitedEarly(rid, reason))
        ops += searcher.on_event(TrialClosed(rid))
    assert ops == [shutdown]
    assert searcher.on_event(TrialClosed(ids[0])) == []


def test_random_replaces_invalid_hp_trials_but_not_errored_ones() -> None:
    searcher = make_searcher(_random(2, 2), SPACE, 3)
    first, second = (op.request_id for op in searcher.initial_operations())
    searcher.on_event(TrialExitedEarly(first, "INVALID_HP"))
    replacement = searcher.on_event(TrialClosed(first))
    assert [type(op) for op in replacement] == [Create]
    searcher.on_event(TrialExitedEarly(second, "ERRORED"))
    assert searcher.on_event(TrialClosed(second)) == []


def test_random_keeps_max_concurrent_going_until_max_trials() -> None:
    searcher = make_searcher(_random(6, 2), SPACE, 3)
    pending = [op.request_id for op in searcher.initial_operations()]
    assert len(pending) == 2
    created = 2
    while pending:
        ops = searcher.on_event(TrialClosed(pending.pop(0)))
        new = [op.request_id for op in ops if isinstance(op, Create)]
        created += len(new)
        pending += new
    assert created == 6


def test_grid_does_not_retry_an_invalid_point() -> None:
    searcher = make_searcher({"name": "grid", "metric": "m", "max_concurrent_trials": 1}, SPACE, 3)
    (first,) = searcher.initial_operations()
    searcher.on_event(TrialExitedEarly(first.request_id, "INVALID_HP"))
    (second,) = searcher.on_event(TrialClosed(first.request_id))
    assert second.hparams != first.hparams  # type: ignore[union-attr]


def test_random_progress_is_the_mean_over_max_trials() -> None:
    searcher = make_searcher(_random(4, 2), SPACE, 3)
    first, second = (op.request_id for op in searcher.initial_operations())
    searcher.on_event(TrialProgress(first, 0.5))
    assert searcher.progress() == pytest.approx(0.125)
    searcher.on_event(TrialClosed(second))
    assert searcher.progress() == pytest.approx(0.375)


def test_request_ids_come_from_a_counter() -> None:
    searcher = make_searcher(_random(3), SPACE, 3)
    assert [op.request_id for op in searcher.initial_operations()] == ["r1", "r2", "r3"]
    assert searcher.initial_operations() == []  # once per search


def test_events_about_unknown_trials_and_unknown_reasons_are_refused() -> None:
    searcher = make_searcher(_random(1), SPACE, 3)
    (op,) = searcher.initial_operations()
    for unknown in ("r9", "r0", "r01", "x1", "r", "r\u00b9", "r\u0663"):  # "¹": int() refuses it
        with pytest.raises(ValueError, match="no trial with request id"):
            searcher.on_event(TrialCreated(unknown))
    with pytest.raises(ValueError, match="unknown exit reason"):
        searcher.on_event(TrialExitedEarly(op.request_id, "BORED"))


def test_random_and_grid_ignore_validation_metrics() -> None:
    searcher = make_searcher(_random(1), SPACE, 3)
    (op,) = searcher.initial_operations()
    assert searcher.on_event(ValidationReported(op.request_id, {"other": 1})) == []


@pytest.mark.parametrize("name", ["random", "grid"])
def test_a_snapshot_holds_open_trials_only_so_it_does_not_grow_with_the_search(name: str) -> None:
    import json

    space = {"x": {"type": "int", "minval": 0, "maxval": 2999, "count": 3000}}
    config = {**_random(3000, 4), "name": name}
    searcher = make_searcher(config, space, 3)
    pending = [op.request_id for op in searcher.initial_operations()]
    sizes = []
    for closed in range(3000):
        ops = searcher.on_event(TrialClosed(pending.pop(0)))
        pending += [op.request_id for op in ops if isinstance(op, Create)]
        if closed in (100, 2900):
            sizes.append(len(json.dumps(searcher.snapshot())))
    assert sizes[1] - sizes[0] < 100  # a few more digits in the counters, nothing per trial
