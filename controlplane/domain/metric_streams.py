"""What Determined's experiment metric streams send each round (ExpMetricNames, MetricBatches,
TrialsSnapshot, TrialsSample). Pure: what is stored now and what the stream already sent in,
the next message out. The API layer polls, every `periodSeconds` (Determined's default 30),
until the experiments are terminal.

Determined's rules, kept here:
- metric names and batches are sent once each: every round carries only what is new;
- a snapshot window is `batchesProcessed ± batchesMargin` (margin at most 100, floor 0);
- a sample ranks the experiment's trials by its searcher (by the searcher metric for random,
  grid and custom; by training length for the halving searchers; never for `single`), keeps
  the top `maxTrials`, and names the trials that entered (promoted) or left (demoted) the
  top since the last round; a trial's data and hyperparameters are sent when it enters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controlplane.domain.errors import InvalidArgument

DEFAULT_PERIOD_S = 30
MAX_MARGIN = 100
DEFAULT_MAX_TRIALS = 25
DEFAULT_MAX_DATAPOINTS = 1000
INT32_MAX = 2**31 - 1

METRIC_TYPES = {
    "METRIC_TYPE_TRAINING": "training",
    "METRIC_TYPE_VALIDATION": "validation",
    "METRIC_TYPE_PROFILING": "profiling",
}

BY_METRIC = "metric"
BY_LENGTH = "length"
_RANKING = {
    "random": BY_METRIC,
    "grid": BY_METRIC,
    "custom": BY_METRIC,
    "async_halving": BY_LENGTH,
    "adaptive_asha": BY_LENGTH,
    "adaptive": BY_LENGTH,
    "adaptive_simple": BY_LENGTH,
    "sync_halving": BY_LENGTH,
}


def period_s(period_seconds: int | None) -> int:
    return period_seconds if period_seconds else DEFAULT_PERIOD_S


def group_of(metric_type: str | None, group: str | None, *, any_group: bool) -> str:
    """The metric group a request names: `group` (where the route takes any group), else its
    `metricType`; naming neither is refused, as Determined refuses it."""
    if metric_type not in (None, "", "METRIC_TYPE_UNSPECIFIED") and metric_type not in METRIC_TYPES:
        raise InvalidArgument(f"metricType must be one of {sorted(METRIC_TYPES)}")
    if any_group and group:
        return group
    chosen = METRIC_TYPES.get(metric_type or "")
    if chosen is None or (not any_group and chosen == "profiling"):
        raise InvalidArgument("must specify a metric group")
    return chosen


@dataclass
class NamesSeen:
    """What an ExpMetricNames stream has sent so far."""

    searcher: set[str] = field(default_factory=set)
    by_group: dict[str, set[str]] = field(default_factory=dict)


def next_names(
    seen: NamesSeen, searcher_metrics: Iterable[str], found: Mapping[str, Iterable[str]]
) -> dict[str, Any]:
    """The ExpMetricNames message with the names not sent before (and `seen` updated)."""
    searcher = [m for m in dict.fromkeys(searcher_metrics) if m and m not in seen.searcher]
    seen.searcher.update(searcher)
    fresh: dict[str, list[str]] = {}
    for group in sorted(found):
        sent = seen.by_group.setdefault(group, set())
        names = sorted(set(found[group]) - sent)
        sent.update(names)
        if names:
            fresh[group] = names
    return {
        "searcherMetrics": searcher,
        "trainingMetrics": fresh.get("training", []),
        "validationMetrics": fresh.get("validation", []),
        "metricNames": [{"group": g, "name": n} for g, names in fresh.items() for n in names],
    }


def next_batches(seen: set[int], found: Iterable[int]) -> list[int]:
    """The steps not sent before, ascending (and `seen` updated)."""
    fresh = sorted(set(found) - seen)
    seen.update(fresh)
    return fresh


def snapshot_window(batches_processed: int, margin: int) -> tuple[int, int]:
    if margin > MAX_MARGIN:
        raise InvalidArgument(f"margin must be <= {MAX_MARGIN}")
    low = max(0, batches_processed - margin)
    high = batches_processed + margin
    return low, high if high >= 0 else INT32_MAX


def ranking(searcher_name: str) -> str:
    if searcher_name == "single":
        raise InvalidArgument("single-trial experiments are not supported for trial sampling")
    found = _RANKING.get(searcher_name)
    if found is None:
        raise InvalidArgument("unable to detect a searcher algorithm for trial sampling")
    return found


@dataclass(frozen=True)
class TrialStanding:
    trial_id: int
    best: float | None  # the trial's best searcher metric
    batches: int  # how far it trained


def top_trials(
    trials: Iterable[TrialStanding], how: str, max_trials: int, *, smaller_is_better: bool
) -> list[int]:
    """The ids of the best `max_trials` trials; trials without a metric rank last."""

    def metric_key(t: TrialStanding) -> tuple[bool, float]:
        if t.best is None or not math.isfinite(t.best):
            return (True, 0.0)
        return (False, t.best if smaller_is_better else -t.best)

    if how == BY_LENGTH:
        ordered = sorted(trials, key=lambda t: (-t.batches, metric_key(t), t.trial_id))
    else:
        ordered = sorted(trials, key=lambda t: (metric_key(t), t.trial_id))
    return [t.trial_id for t in ordered[:max_trials]]


def promotions(current: Sequence[int], top: Sequence[int]) -> tuple[list[int], list[int]]:
    """(promoted, demoted): the trials that entered and left the top since the last round."""
    promoted = [t for t in top if t not in current]
    demoted = sorted(t for t in current if t not in top)
    return promoted, demoted
