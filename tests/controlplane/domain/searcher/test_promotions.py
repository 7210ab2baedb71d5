"""ASHA with `promotions: true`: losers pause and may be resumed; nothing is trained twice."""

from __future__ import annotations

from typing import Any

from controlplane.domain.searcher import (
    Close,
    Create,
    Promote,
    Shutdown,
    Stop,
    TrialClosed,
    ValidationReported,
    make_searcher,
)

CONFIG: dict[str, Any] = {
    "name": "async_halving",
    "metric": "loss",
    "time_metric": "batches",
    "num_rungs": 2,
    "divisor": 2,
    "max_time": 2,
    "max_trials": 4,
    "max_concurrent_trials": 1,
}


def _report(rid: str, loss: float, batches: int) -> ValidationReported:
    return ValidationReported(rid, {"loss": loss, "batches": batches})


def _ids(ops: list[Any]) -> list[str]:
    return [op.request_id for op in ops if isinstance(op, Create)]


def test_a_paused_loser_is_promoted_once_the_rung_is_big_enough() -> None:
    searcher = make_searcher({**CONFIG, "promotions": True}, {}, 1)
    (r1,) = _ids(searcher.initial_operations())
    assert searcher.on_event(_report(r1, 1.0, 1)) == []
    (r2,) = _ids(searcher.on_event(_report(r1, 1.0, 2)))  # r1 done at the top rung
    ops = searcher.on_event(_report(r2, 2.0, 1))  # rank 1 of 2, keep 1: paused
    assert ops[0] == Stop(r2)
    (r3,) = _ids(ops)
    ops = searcher.on_event(_report(r3, 3.0, 1))
    assert ops[0] == Stop(r3)
    (r4,) = _ids(ops)
    # Rung 0 now holds four: the top two go on, so the paused r2 resumes from its checkpoint.
    assert searcher.on_event(_report(r4, 4.0, 1)) == [Stop(r4), Promote(r2)]
    # A paused trial's late report is ignored.
    assert searcher.on_event(_report(r3, 0.1, 1)) == []
    # r2 finishes the top rung; nothing else can be promoted or created: the paused close.
    assert searcher.on_event(_report(r2, 2.0, 2)) == [Close(r2), Close(r3), Close(r4)]
    ops = [op for rid in (r1, r2, r3, r4) for op in searcher.on_event(TrialClosed(rid))]
    assert ops == [Shutdown()]


def test_without_promotions_the_same_losers_are_closed_for_good() -> None:
    searcher = make_searcher(CONFIG, {}, 1)
    (r1,) = _ids(searcher.initial_operations())
    searcher.on_event(_report(r1, 1.0, 1))
    (r2,) = _ids(searcher.on_event(_report(r1, 1.0, 2)))
    ops = searcher.on_event(_report(r2, 2.0, 1))
    assert ops[0] == Close(r2)
    assert not any(isinstance(op, Stop | Promote) for op in ops)


def test_a_promoted_trial_walks_on_from_the_rung_it_paused_at() -> None:
    config = {**CONFIG, "num_rungs": 3, "max_time": 4, "max_trials": 4, "promotions": True}
    searcher = make_searcher(config, {}, 1)
    (r1,) = _ids(searcher.initial_operations())
    searcher.on_event(_report(r1, 1.0, 1))
    searcher.on_event(_report(r1, 1.0, 2))
    (r2,) = _ids(searcher.on_event(_report(r1, 1.0, 4)))
    (r3,) = _ids(searcher.on_event(_report(r2, 2.0, 1)))
    (r4,) = _ids(searcher.on_event(_report(r3, 3.0, 1)))
    assert Promote(r2) in searcher.on_event(_report(r4, 4.0, 1))
    # Back in rung 1 (units 2): a report at 2 places it there; it ranks 1 of 2, keep 1: paused.
    ops = searcher.on_event(_report(r2, 2.0, 2))
    assert ops[0] == Stop(r2)
