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


def test_a_free_slot_promotes_a_paused_trial_before_it_creates_one() -> None:
    # The same story as above with room for more trials: r2 has earned rung 1 once rung 0 holds
    # four results, and resuming it beats starting r5 (it has paid for rung 0 already).
    config = {**CONFIG, "max_trials": 10, "promotions": True}
    searcher = make_searcher(config, {}, 1)
    (r1,) = _ids(searcher.initial_operations())
    searcher.on_event(_report(r1, 1.0, 1))
    (r2,) = _ids(searcher.on_event(_report(r1, 1.0, 2)))
    (r3,) = _ids(searcher.on_event(_report(r2, 2.0, 1)))
    (r4,) = _ids(searcher.on_event(_report(r3, 3.0, 1)))
    assert searcher.on_event(_report(r4, 4.0, 1)) == [Stop(r4), Promote(r2)]
    # r2 loses rung 1 to r1: its slot goes to a new trial, as nothing else is promotable.
    ops = searcher.on_event(_report(r2, 2.0, 2))
    assert ops[0] == Close(r2) and len(_ids(ops)) == 1


def test_with_promotions_a_rung_ranks_a_trial_by_its_best_report_so_far() -> None:
    # Rungs at 2 and 4 batches. r1 reports 1.0 and then a noisy 1.5 at the rung: it goes into
    # the rung as 1.0 (its best checkpoint), so r2's 1.2 ranks second and r2 is paused.
    config = {**CONFIG, "max_time": 4, "max_trials": 10, "promotions": True}
    searcher = make_searcher(config, {}, 1)
    (r1,) = _ids(searcher.initial_operations())
    searcher.on_event(_report(r1, 1.0, 1))
    searcher.on_event(_report(r1, 1.5, 2))
    (r2,) = _ids(searcher.on_event(_report(r1, 1.5, 4)))
    ops = searcher.on_event(_report(r2, 1.2, 2))
    assert ops[0] == Stop(r2)
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
