"""What a searcher's operations do to an experiment and its trials. Pure: an operation and a
view of the trial it names in, one change out; the service applies it (`services.search`).

Determined 0.38.1 moves a trial the searcher stops to STOPPING_COMPLETED and lets a running one
run to its end (reference §4.8). Here a running trial the searcher closes or pauses gets a
graceful preemption with the searcher as the reason: it checkpoints and exits at its next
`should_preempt()`, so no compute goes to a trial whose result is no longer wanted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controlplane.domain.errors import InvalidArgument
from controlplane.domain.limits import MAX_CONCURRENT_TRIALS
from controlplane.domain.searcher import (
    Close,
    Create,
    Promote,
    Shutdown,
    Stop,
    TrialClosed,
    TrialExitedEarly,
)
from controlplane.domain.states import RunState

S = RunState

# Our wire's early-exit reasons (Determined's ExitedReason names) as the searcher's.
EARLY_EXIT_REASONS = {
    "EXITED_REASON_INVALID_HP": "INVALID_HP",
    "EXITED_REASON_USER_REQUESTED_STOP": "USER_CANCELED",
}
# A trial that reported an early exit is killed this long after the report if it still runs.
EARLY_EXIT_KILL_SECONDS = 10.0
SEARCHING = frozenset({S.ACTIVE, S.PAUSED})
_ALIVE = frozenset({S.ACTIVE, S.PAUSED})


@dataclass(frozen=True)
class TrialView:
    request_id: str
    state: RunState
    running: bool  # it has a live allocation
    paused_by_searcher: bool = False


@dataclass(frozen=True)
class NewTrial:
    request_id: str
    hparams: dict[str, Any]
    seed: int
    state: RunState


@dataclass(frozen=True)
class TrialChange:
    """``target`` None: the state stays; ``preempt``: ask its running allocation to stop."""

    request_id: str
    target: RunState | None
    preempt: bool
    paused_by_searcher: bool
    reason: str


@dataclass(frozen=True)
class ExperimentStop:
    target: RunState  # a STOPPING_* state
    cancel_trials: bool  # alive trials are cancelled (not closed as completed)
    reason: str


Change = NewTrial | TrialChange | ExperimentStop


def check_concurrency(searcher: dict[str, Any]) -> None:
    """Refuse a search that would start more than MAX_CONCURRENT_TRIALS trials at once (a
    random search of 10^8 trials with max_concurrent_trials 0 once exhausted the master)."""
    if searcher.get("name") in ("single", "grid"):
        return  # one trial; a grid's size is bounded by its own limit
    concurrent = searcher.get("max_concurrent_trials")
    trials = searcher.get("max_trials")
    if not isinstance(trials, int) or trials <= MAX_CONCURRENT_TRIALS:
        return
    if concurrent == 0 or (isinstance(concurrent, int) and concurrent > MAX_CONCURRENT_TRIALS):
        raise InvalidArgument(
            f"the searcher would run {trials} trials at once; at most {MAX_CONCURRENT_TRIALS}"
            " are supported (set max_concurrent_trials)"
        )


def close_trial(view: TrialView, reason: str) -> TrialChange | None:
    """Done with the trial: it completes (a running one checkpoints and exits first)."""
    if view.state not in _ALIVE:
        return None
    target = S.STOPPING_COMPLETED if view.running else S.COMPLETED
    return TrialChange(view.request_id, target, view.running, False, reason)


def cancel_trial(view: TrialView, reason: str) -> TrialChange | None:
    if view.state not in _ALIVE:
        return None
    target = S.STOPPING_CANCELED if view.running else S.CANCELED
    return TrialChange(view.request_id, target, view.running, False, reason)


def plan_op(exp_state: RunState, op: object, view: TrialView | None) -> Change | None:
    """The change one operation asks for; None when there is nothing to do (the trial ended,
    or the experiment is stopping and creates nothing more)."""
    if isinstance(op, Create):
        if exp_state not in SEARCHING or view is not None:
            return None  # a replayed Create finds its trial made already
        state = S.ACTIVE if exp_state is S.ACTIVE else S.PAUSED
        return NewTrial(op.request_id, dict(op.hparams), int(op.seed), state)
    if isinstance(op, Shutdown):
        if exp_state not in SEARCHING:
            return None
        if op.failure:
            return ExperimentStop(S.STOPPING_ERROR, True, "the searcher failed")
        if op.cancel:
            return ExperimentStop(S.STOPPING_CANCELED, True, "every trial was cancelled")
        return ExperimentStop(S.STOPPING_COMPLETED, False, "the searcher finished")
    if view is None:
        return None
    if isinstance(op, Close):
        return close_trial(view, "the searcher closed the trial")
    if isinstance(op, Stop):
        if view.state is not S.ACTIVE:
            return None
        return TrialChange(view.request_id, S.PAUSED, view.running, True, "the searcher paused it")
    if isinstance(op, Promote):
        if view.state is not S.PAUSED or not view.paused_by_searcher:
            return None
        target = S.ACTIVE if exp_state is S.ACTIVE else None
        return TrialChange(view.request_id, target, False, False, "the searcher promoted it")
    raise TypeError(f"unknown searcher operation {op!r}")


def exit_events(request_id: str, state: RunState, early_exit_reason: str | None) -> list[object]:
    """What the searcher hears when a trial ends; an early exit it heard of already is not
    repeated."""
    if not state.is_terminal:
        return []
    events: list[object] = []
    if early_exit_reason is None and state is S.ERROR:
        events.append(TrialExitedEarly(request_id, "ERRORED"))
    elif early_exit_reason is None and state is S.CANCELED:
        events.append(TrialExitedEarly(request_id, "USER_CANCELED"))
    events.append(TrialClosed(request_id))
    return events


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# The searchers that decide by the metric's value. single, random and grid never read it:
# Determined completes those without it (its core_api/11_generic_metrics fixture validates
# without `searcher.metric`).
METRIC_SEARCHERS = frozenset({"async_halving", "adaptive_asha", "tpe"})


def validation_problem(searcher: dict[str, Any], metrics: dict[str, Any]) -> str | None:
    """Why the searcher cannot use this validation, or None. Determined errors the experiment
    then (ASHA needs `metric` and `time_metric`), rather than wait forever; a searcher that
    never reads the metric has no problem with any validation."""
    if searcher.get("name") not in METRIC_SEARCHERS:
        return None
    wanted = [("searcher.metric", searcher.get("metric"))]
    if searcher.get("name") in ("async_halving", "adaptive_asha") or searcher.get("time_metric"):
        wanted.append(("searcher.time_metric", searcher.get("time_metric")))
    for key, name in wanted:
        if not name:
            continue
        if name not in metrics:
            shown = ", ".join(sorted(metrics)[:20]) or "none"
            return f"a validation report lacks the metric '{name}' ({key}); it reported: {shown}"
        if not _number(metrics[name]):
            return f"the validation metric '{name}' ({key}) is {metrics[name]!r}, not a number"
    return None


def better(value: float, best: float | None, smaller_is_better: bool) -> bool:
    if best is None:
        return True
    return value < best if smaller_is_better else value > best
