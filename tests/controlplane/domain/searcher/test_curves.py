"""`promotion_rule: curve`: the slot goes to the trial expected to end best (curves.CurveSearch)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.domain.searcher import (
    Close,
    Create,
    Promote,
    SearcherConfigError,
    Shutdown,
    Stop,
    TrialClosed,
    TrialExitedEarly,
    ValidationReported,
    make_searcher,
    restore_searcher,
)

from .world import World, replay, roundtrip

CONFIG: dict[str, Any] = {
    "name": "adaptive_asha",
    "metric": "loss",
    "time_metric": "batches",
    "max_time": 10,
    "max_trials": 5,
    "max_concurrent_trials": 1,
    "promotions": True,
    "promotion_rule": "curve",
    "sampler": "random",
}
SPACE = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}


def _report(rid: str, loss: float, batches: int) -> ValidationReported:
    return ValidationReported(rid, {"loss": loss, "batches": batches})


def _created(ops: list[Any]) -> str:
    (rid,) = [op.request_id for op in ops if isinstance(op, Create)]
    return rid


def test_the_leader_trains_on_without_waiting_and_the_rest_close_at_the_end() -> None:
    searcher = make_searcher(CONFIG, SPACE, 1)
    r1 = _created(searcher.initial_operations())
    # Fewer than four results to judge by: every report hands the slot to a new trial.
    ops = searcher.on_event(_report(r1, 1.0, 1))
    assert ops[0] == Stop(r1)
    r2 = _created(ops)
    r3 = _created(searcher.on_event(_report(r2, 1.2, 1)))
    ops = searcher.on_event(_report(r3, 0.9, 1))
    r4 = _created(ops)
    # Four results: r3 is the best there is, so it comes back at once (ASHA would wait for
    # a rung of `divisor` trials at its next rung, and again at every rung after).
    assert searcher.on_event(_report(r4, 1.1, 1)) == [Stop(r4), Promote(r3)]
    assert searcher.on_event(_report(r3, 0.5, 2)) == []
    assert searcher.on_event(_report(r3, 0.4, 5)) == []
    # At max_time it is done; the paused trials are not expected to beat it: a new one comes.
    ops = searcher.on_event(_report(r3, 0.2, 10))
    assert ops[0] == Close(r3)
    r5 = _created(ops)
    # max_trials reached: a trial that is not among the best is closed, and so are the
    # paused ones once nothing can run any more.
    assert searcher.on_event(_report(r5, 1.3, 1)) == [Close(r5), Close(r1), Close(r2), Close(r4)]
    ops = [op for rid in (r1, r2, r3, r4, r5) for op in searcher.on_event(TrialClosed(rid))]
    assert ops == [Shutdown()]


def _searcher_with(method: dict[str, Any], issued: int, open_ids: list[str]) -> Any:
    """A curve search restored from a snapshot whose method state is `method`."""
    fresh = make_searcher({**CONFIG, "max_trials": 9}, SPACE, 1)
    fresh.initial_operations()
    snapshot = fresh.snapshot()
    snapshot["next_request"] = issued + 1
    snapshot["open"] = dict.fromkeys(open_ids, 0.0)
    snapshot["paused"] = [rid for rid in method["paused"]]
    snapshot["method"] = method
    return restore_searcher({**CONFIG, "max_trials": 9}, SPACE, roundtrip(snapshot))


def _state(**curves: list[list[float]]) -> dict[str, Any]:
    return {
        "curves": curves,
        "running": [],
        "paused": [],
        "done": [],
        "points": {},
        "created": len(curves),
        "invalid": 0,
    }


def test_a_trial_that_stalls_gives_its_slot_to_one_expected_to_do_better() -> None:
    # r1 and r2 trained on from their first report and improved by 0.8 and 0.7 after it.
    state = _state(
        r1=[[1, 1.0], [10, 0.2]],
        r2=[[1, 1.2], [10, 0.5]],
        r3=[[1, 0.85]],
        r4=[[1, 1.0], [2, 0.95]],
    )
    state["done"] = ["r1", "r2"]
    state["paused"] = ["r3"]
    state["running"] = ["r4"]
    searcher = _searcher_with(state, 4, ["r3", "r4"])
    # r4 stalls at 0.95 after 3 batches: expected 0.95 - 0.7 = 0.25 at max_time, while the
    # paused r3 is expected to reach 0.85 - 0.7 = 0.15, better than any trial done.
    assert searcher.on_event(_report("r4", 0.95, 3)) == [Stop("r4"), Promote("r3")]


def test_a_trial_that_keeps_improving_keeps_its_slot() -> None:
    state = _state(
        r1=[[1, 1.0], [10, 0.2]],
        r2=[[1, 1.2], [10, 0.5]],
        r3=[[1, 0.9]],
        r4=[[1, 1.0], [2, 0.6]],
    )
    state["done"] = ["r1", "r2"]
    state["paused"] = ["r3"]
    state["running"] = ["r4"]
    searcher = _searcher_with(state, 4, ["r3", "r4"])
    assert searcher.on_event(_report("r4", 0.3, 3)) == []


def test_an_invalid_trial_is_replaced_and_a_failed_one_keeps_its_result() -> None:
    searcher = make_searcher({**CONFIG, "max_concurrent_trials": 2}, SPACE, 3)
    r1, r2 = (op.request_id for op in searcher.initial_operations())
    replacement = _created(searcher.on_event(TrialExitedEarly(r1, "INVALID_HP")))
    assert searcher.on_event(TrialClosed(r1)) == []
    searcher.on_event(_report(r2, 0.5, 1))
    ops = searcher.on_event(TrialExitedEarly(replacement, "ERRORED"))
    assert any(isinstance(op, Create) for op in ops)  # its slot goes to a new trial
    method = searcher.snapshot()["method"]
    assert r1 not in method["curves"] and replacement in method["done"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"promotions": False}, "needs promotions: true"),
        ({"promotion_rule": "elbow"}, "must be one of rungs, curve"),
    ],
)
def test_bad_rules_are_refused(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(SearcherConfigError, match=message):
        make_searcher({**CONFIG, **extra}, SPACE, 1)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    seed=st.integers(0, 2**31 - 1),
    concurrent=st.integers(1, 4),
    trials=st.integers(1, 9),
    tpe=st.booleans(),
)
def test_limits_replay_and_restore(
    data: st.DataObject, seed: int, concurrent: int, trials: int, tpe: bool
) -> None:
    config = {
        **CONFIG,
        "max_trials": trials,
        "max_concurrent_trials": concurrent,
        "sampler": "tpe" if tpe else "random",
    }
    world = World(make_searcher(config, SPACE, seed), step=2, limit=concurrent)
    world.start()
    for _ in range(300):
        if not world.move(
            lambda n: data.draw(st.integers(0, n - 1)),
            lambda rid: data.draw(st.floats(0, 10, allow_nan=False)),
        ):
            break
    assert world.creates() <= trials + world.invalid
    if not world.possible():
        assert world.shutdown is not None
    assert replay(make_searcher(config, SPACE, seed), world.events) == world.ops
    cut = data.draw(st.integers(0, len(world.events)))
    original = make_searcher(config, SPACE, seed)
    before = replay(original, world.events[:cut])
    restored = restore_searcher(config, SPACE, roundtrip(original.snapshot()))
    assert before + replay(restored, world.events[cut:], initial=False) == world.ops
