"""What each searcher operation does to a trial and an experiment (pure), as a table, and
properties: every change it plans is an edge of the transition tables."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.errors import InvalidArgument
from controlplane.domain.search_plan import (
    ExperimentStop,
    NewTrial,
    TrialChange,
    TrialView,
    cancel_trial,
    check_concurrency,
    close_trial,
    exit_events,
    plan_op,
    validation_problem,
)
from controlplane.domain.searcher import (
    Close,
    Create,
    Promote,
    Shutdown,
    Stop,
    TrialClosed,
    TrialExitedEarly,
)
from controlplane.domain.states import EXPERIMENT_TRANSITIONS, TRIAL_TRANSITIONS, RunState

S = RunState
RUNNING = TrialView("r", S.ACTIVE, running=True)
QUEUED = TrialView("r", S.ACTIVE, running=False)
SEARCHER_PAUSED = TrialView("r", S.PAUSED, running=False, paused_by_searcher=True)
USER_PAUSED = TrialView("r", S.PAUSED, running=False)


@pytest.mark.parametrize(
    ("exp", "op", "view", "expected"),
    [
        (S.ACTIVE, Create("r", {"a": 1}, 5), None, NewTrial("r", {"a": 1}, 5, S.ACTIVE)),
        (S.PAUSED, Create("r", {"a": 1}, 5), None, NewTrial("r", {"a": 1}, 5, S.PAUSED)),
        (S.STOPPING_CANCELED, Create("r", {}, 5), None, None),
        (S.ACTIVE, Create("r", {}, 5), QUEUED, None),  # replayed: made already
        (S.ACTIVE, Close("r"), RUNNING, ("STOPPING_COMPLETED", True, False)),
        (S.ACTIVE, Close("r"), QUEUED, ("COMPLETED", False, False)),
        (S.ACTIVE, Close("r"), SEARCHER_PAUSED, ("COMPLETED", False, False)),
        (S.ACTIVE, Close("r"), TrialView("r", S.COMPLETED, False), None),
        (S.ACTIVE, Close("r"), TrialView("r", S.STOPPING_COMPLETED, True), None),
        (S.ACTIVE, Close("gone"), None, None),
        (S.ACTIVE, Stop("r"), RUNNING, ("PAUSED", True, True)),
        (S.ACTIVE, Stop("r"), QUEUED, ("PAUSED", False, True)),
        (S.ACTIVE, Stop("r"), USER_PAUSED, None),
        (S.ACTIVE, Promote("r"), SEARCHER_PAUSED, ("ACTIVE", False, False)),
        (S.PAUSED, Promote("r"), SEARCHER_PAUSED, (None, False, False)),
        (S.ACTIVE, Promote("r"), USER_PAUSED, None),
        (S.ACTIVE, Promote("r"), RUNNING, None),
    ],
)
def test_operations(exp: RunState, op: object, view: TrialView | None, expected: object) -> None:
    got = plan_op(exp, op, view)
    if isinstance(got, TrialChange):
        target = got.target.value if got.target else None
        assert (target, got.preempt, got.paused_by_searcher) == expected
    else:
        assert got == expected


@pytest.mark.parametrize(
    ("op", "target", "cancel"),
    [
        (Shutdown(), S.STOPPING_COMPLETED, False),
        (Shutdown(cancel=True), S.STOPPING_CANCELED, True),
        (Shutdown(failure=True), S.STOPPING_ERROR, True),
    ],
)
def test_shutdown(op: Shutdown, target: RunState, cancel: bool) -> None:
    got = plan_op(S.ACTIVE, op, None)
    assert isinstance(got, ExperimentStop) and (got.target, got.cancel_trials) == (target, cancel)
    assert plan_op(S.STOPPING_CANCELED, op, None) is None


@pytest.mark.parametrize(
    ("state", "early", "expected"),
    [
        (S.COMPLETED, None, [TrialClosed("r")]),
        (S.ERROR, None, [TrialExitedEarly("r", "ERRORED"), TrialClosed("r")]),
        (S.CANCELED, None, [TrialExitedEarly("r", "USER_CANCELED"), TrialClosed("r")]),
        (S.ERROR, "EXITED_REASON_INVALID_HP", [TrialClosed("r")]),  # heard at the report
        (S.ACTIVE, None, []),
        (S.STOPPING_COMPLETED, None, []),
    ],
)
def test_exit_events(state: RunState, early: str | None, expected: list[object]) -> None:
    assert exit_events("r", state, early) == expected


@pytest.mark.parametrize(
    ("searcher", "metrics", "problem"),
    [
        ({"name": "random", "metric": "loss"}, {"loss": 1}, None),
        # single, random and grid never read the metric: Determined completes them without it
        ({"name": "single", "metric": "x"}, {"acc": 1}, None),
        ({"name": "random", "metric": "loss"}, {"acc": 1}, None),
        ({"name": "grid", "metric": "loss"}, {"loss": "x"}, None),
        ({"name": "tpe", "metric": "loss"}, {"acc": 1}, "lacks the metric 'loss'"),
        ({"name": "tpe", "metric": "loss"}, {"loss": "x"}, "not a number"),
        ({"name": "async_halving", "metric": "loss", "time_metric": "b"}, {"loss": True, "b": 1},
         "not a number"),
        ({"name": "adaptive_asha", "metric": "loss"}, {"acc": 1}, "lacks the metric 'loss'"),
        ({"name": "adaptive_asha", "metric": "loss", "time_metric": "batches"}, {"loss": 1},
         "lacks the metric 'batches'"),
        ({"name": "adaptive_asha", "metric": "loss", "time_metric": "batches"},
         {"loss": 1, "batches": 10}, None),
    ],
)  # fmt: skip
def test_validation_problem(
    searcher: dict[str, str], metrics: dict[str, object], problem: str | None
) -> None:
    got = validation_problem(searcher, metrics)
    assert got == problem if problem is None else problem in (got or "")


def test_concurrency_limit() -> None:
    check_concurrency({"name": "random", "max_trials": 10**8, "max_concurrent_trials": 2})
    check_concurrency({"name": "random", "max_trials": 100, "max_concurrent_trials": 0})
    with pytest.raises(InvalidArgument, match="max_concurrent_trials"):
        check_concurrency({"name": "random", "max_trials": 10**8, "max_concurrent_trials": 0})


views = st.builds(
    TrialView,
    request_id=st.just("r"),
    state=st.sampled_from(list(RunState)),
    running=st.booleans(),
    paused_by_searcher=st.booleans(),
)
ops = st.sampled_from([Close("r"), Stop("r"), Promote("r"), Create("r", {}, 1), Shutdown()])


@given(st.sampled_from([S.ACTIVE, S.PAUSED]), ops, views)
def test_every_planned_change_is_an_edge(exp: RunState, op: object, view: TrialView) -> None:
    got = plan_op(exp, op, view)
    if isinstance(got, TrialChange) and got.target is not None:
        assert (view.state, got.target) in TRIAL_TRANSITIONS
    if isinstance(got, ExperimentStop):
        assert (exp, got.target) in EXPERIMENT_TRANSITIONS


@given(views)
def test_close_and_cancel_end_or_drain_a_live_trial(view: TrialView) -> None:
    for plan, stopping, final in (
        (close_trial, S.STOPPING_COMPLETED, S.COMPLETED),
        (cancel_trial, S.STOPPING_CANCELED, S.CANCELED),
    ):
        got = plan(view, "why")
        if view.state not in (S.ACTIVE, S.PAUSED):
            assert got is None
            continue
        assert got is not None and (view.state, got.target) in TRIAL_TRANSITIONS
        assert got.target == (stopping if view.running else final)
        assert got.preempt == view.running
