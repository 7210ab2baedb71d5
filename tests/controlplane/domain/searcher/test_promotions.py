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
    # Alone in rung 0 it has not beaten anyone yet: paused until the rung holds two results.
    ops = searcher.on_event(_report(r1, 1.0, 1))
    assert ops[0] == Stop(r1)
    (r2,) = _ids(ops)
    assert searcher.on_event(_report(r2, 2.0, 1)) == [Stop(r2), Promote(r1)]
    (r3,) = _ids(searcher.on_event(_report(r1, 1.0, 2)))  # r1 done at the top rung
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


def test_when_no_result_can_come_any_more_the_best_of_a_small_rung_goes_on() -> None:
    # Two trials, divisor 2: rung 0 sends one on. Rung 1 (units 2) would need two results to
    # send one on to rung 2, and no third trial can come: its best goes on all the same.
    config = {**CONFIG, "num_rungs": 3, "max_time": 4, "max_trials": 2, "promotions": True}
    searcher = make_searcher(config, {}, 1)
    (r1,) = _ids(searcher.initial_operations())
    (r2,) = _ids(searcher.on_event(_report(r1, 1.0, 1)))
    assert searcher.on_event(_report(r2, 2.0, 1)) == [Stop(r2), Promote(r1)]
    assert searcher.on_event(_report(r1, 1.0, 2)) == []  # goes on: no pause and resume
    assert searcher.on_event(_report(r1, 1.0, 4)) == [Close(r1), Close(r2)]


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
    (r2,) = _ids(searcher.on_event(_report(r1, 1.0, 1)))
    assert searcher.on_event(_report(r2, 2.0, 1)) == [Stop(r2), Promote(r1)]
    (r3,) = _ids(searcher.on_event(_report(r1, 1.0, 2)))  # alone in rung 1: paused
    (r4,) = _ids(searcher.on_event(_report(r3, 3.0, 1)))
    assert searcher.on_event(_report(r4, 4.0, 1)) == [Stop(r4), Promote(r2)]
    # Back in rung 1 (units 2): a report at 2 places it there; it ranks 1 of 2, keep 1: paused,
    # and r1, now the top of a rung of two, goes on (the highest rung first).
    assert searcher.on_event(_report(r2, 2.0, 2)) == [Stop(r2), Promote(r1)]


def test_a_free_slot_promotes_a_paused_trial_before_it_creates_one() -> None:
    # Room for eight more trials, yet r1, which has earned rung 1 once rung 0 holds two results,
    # resumes first (it has paid for rung 0 already).
    config = {**CONFIG, "max_trials": 10, "promotions": True}
    searcher = make_searcher(config, {}, 1)
    (r1,) = _ids(searcher.initial_operations())
    (r2,) = _ids(searcher.on_event(_report(r1, 1.0, 1)))
    assert searcher.on_event(_report(r2, 2.0, 1)) == [Stop(r2), Promote(r1)]
    (r3,) = _ids(searcher.on_event(_report(r1, 1.0, 2)))
    (r4,) = _ids(searcher.on_event(_report(r3, 3.0, 1)))
    assert searcher.on_event(_report(r4, 4.0, 1)) == [Stop(r4), Promote(r2)]
    # r2 finishes: its slot goes to a new trial, as nothing else is promotable.
    ops = searcher.on_event(_report(r2, 2.0, 2))
    assert ops[0] == Close(r2) and len(_ids(ops)) == 1


def test_with_promotions_a_rung_ranks_a_trial_by_its_best_report_so_far() -> None:
    # Rungs at 2 and 4 batches. r1 reports 1.0 and then a noisy 1.5 at the rung: it goes into
    # the rung as 1.0 (its best checkpoint), so r2's 1.2 ranks second: r2 pauses, r1 goes on.
    config = {**CONFIG, "max_time": 4, "max_trials": 10, "promotions": True}
    searcher = make_searcher(config, {}, 1)
    (r1,) = _ids(searcher.initial_operations())
    assert searcher.on_event(_report(r1, 1.0, 1)) == []
    (r2,) = _ids(searcher.on_event(_report(r1, 1.5, 2)))
    assert searcher.on_event(_report(r2, 1.2, 2)) == [Stop(r2), Promote(r1)]
    # Without promotions the rung takes the report at the boundary, as Determined's: r2 leads.
    searcher = make_searcher({**config, "promotions": False}, {}, 1)
    (r1,) = _ids(searcher.initial_operations())
    searcher.on_event(_report(r1, 1.0, 1))
    searcher.on_event(_report(r1, 1.5, 2))
    (r2,) = _ids(searcher.on_event(_report(r1, 1.5, 4)))
    assert searcher.on_event(_report(r2, 1.2, 2)) == []


def _adaptive(**extra: Any) -> dict[str, Any]:
    return {
        "name": "adaptive_asha",
        "metric": "accuracy",
        "smaller_is_better": False,
        "time_metric": "epochs",
        "max_time": 27,
        "divisor": 3,
        "max_trials": 40,
        "max_concurrent_trials": 4,
        **extra,
    }


SPACE: dict[str, Any] = {
    "lr": {"type": "log", "minval": -4, "maxval": 0, "base": 10},
    "width": {"type": "int", "minval": 4, "maxval": 96},
    "opt": {"type": "categorical", "vals": ["sgd", "adam"]},
}


def test_promotions_default_to_one_bracket_and_tpe_sampling() -> None:
    method: Any = make_searcher(_adaptive(promotions=True), SPACE, 1).method
    assert len(method.searches) == 1
    assert [rung.units for rung in method.searches[0].rungs] == [1, 3, 9, 27]
    assert method.searches[0].model is not None


def test_without_promotions_adaptive_asha_stays_determineds() -> None:
    method: Any = make_searcher(_adaptive(), SPACE, 1).method
    assert [len(search.rungs) for search in method.searches] == [4, 3, 2]
    assert all(search.model is None for search in method.searches)
    explicit: Any = make_searcher(
        _adaptive(promotions=True, mode="standard", sampler="random"), SPACE, 1
    ).method
    assert [len(search.rungs) for search in explicit.searches] == [4, 3, 2]
    assert all(search.model is None for search in explicit.searches)


def test_tpe_sampling_starts_with_the_trials_random_sampling_would_create() -> None:
    # Until a rung holds enough results there is nothing to fit: the same random draws.
    with_model = make_searcher(_adaptive(promotions=True), SPACE, 5).initial_operations()
    without = make_searcher(
        _adaptive(promotions=True, sampler="random"), SPACE, 5
    ).initial_operations()
    assert with_model == without
