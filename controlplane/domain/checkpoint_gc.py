"""Which checkpoints of an experiment garbage collection deletes, and why it keeps the others.

Determined 0.38's rule (determined-behaviour.md §5.5): a checkpoint goes when it is outside the
experiment's top `save_experiment_best` and outside its trial's top `save_trial_best` (ranked by
the searcher metric of the validation at the same `steps_completed`; one without such a
validation ranks nowhere), and outside its trial's latest `save_trial_latest`, and nothing else
holds on to it: a warm start of another trial, a model version, or the user's protection.

Pure: the snapshot comes in, the plan goes out. Ties are broken by steps then uuid, so the same
snapshot always gives the same plan.
"""

from __future__ import annotations

import enum
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta


class KeepReason(enum.StrEnum):
    WARM_START = "used as a warm start by a trial"
    MODEL_REGISTRY = "registered as a model version"
    USER_PROTECTED = "protected by its owner"
    EXPERIMENT_BEST = "among the experiment's save_experiment_best"
    TRIAL_BEST = "among its trial's save_trial_best"
    TRIAL_LATEST = "among its trial's save_trial_latest"


class ProtectReason(enum.StrEnum):
    WARM_START = "WARM_START"
    MODEL_REGISTRY = "MODEL_REGISTRY"
    USER_PROTECTED = "USER_PROTECTED"


_PROTECT_KEEP = {
    ProtectReason.WARM_START: KeepReason.WARM_START,
    ProtectReason.MODEL_REGISTRY: KeepReason.MODEL_REGISTRY,
    ProtectReason.USER_PROTECTED: KeepReason.USER_PROTECTED,
}


@dataclass(frozen=True)
class GcPolicy:
    """The save_* keys of `checkpoint_storage` and the searcher's metric direction."""

    save_experiment_best: int = 0
    save_trial_best: int = 1
    save_trial_latest: int = 1
    smaller_is_better: bool = True

    def __post_init__(self) -> None:
        for name in ("save_experiment_best", "save_trial_best", "save_trial_latest"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"checkpoint_storage.{name} must be an integer >= 0")

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> GcPolicy:
        """From an expanded experiment config (its checkpoint_storage and searcher blocks)."""
        storage = config.get("checkpoint_storage")
        storage = storage if isinstance(storage, Mapping) else {}
        searcher = config.get("searcher")
        searcher = searcher if isinstance(searcher, Mapping) else {}

        def count(key: str, default: int) -> int:
            value = storage.get(key)
            return default if value is None else value  # type: ignore[return-value]

        return cls(
            save_experiment_best=count("save_experiment_best", 0),
            save_trial_best=count("save_trial_best", 1),
            save_trial_latest=count("save_trial_latest", 1),
            smaller_is_better=searcher.get("smaller_is_better", True) is not False,
        )


@dataclass(frozen=True)
class CheckpointFacts:
    """A checkpoint that still has files (COMPLETED or PARTIALLY_DELETED)."""

    uuid: str
    trial_id: int
    steps_completed: int
    metric: float | None  # the searcher metric of the validation at the same steps, if any


@dataclass(frozen=True)
class GcPlan:
    delete: tuple[str, ...]
    keep: Mapping[str, tuple[KeepReason, ...]]


def _usable(metric: float | None) -> bool:
    return metric is not None and not math.isnan(metric)


def _best(ckpts: Iterable[CheckpointFacts], n: int, smaller: bool) -> list[str]:
    ranked = [c for c in ckpts if _usable(c.metric)]
    sign = 1.0 if smaller else -1.0
    ranked.sort(key=lambda c: (sign * c.metric, -c.steps_completed, c.uuid))  # type: ignore[operator]
    return [c.uuid for c in ranked[:n]]


def _latest(ckpts: Iterable[CheckpointFacts], n: int) -> list[str]:
    ordered = sorted(ckpts, key=lambda c: (-c.steps_completed, c.uuid))
    return [c.uuid for c in ordered[:n]]


def plan_gc(
    checkpoints: Iterable[CheckpointFacts],
    policy: GcPolicy,
    protected: Mapping[str, Iterable[ProtectReason]],
) -> GcPlan:
    """Every checkpoint given appears once: in `delete`, or in `keep` with its reasons."""
    ckpts = sorted(checkpoints, key=lambda c: c.uuid)
    reasons: dict[str, list[KeepReason]] = defaultdict(list)
    for c in ckpts:
        given = {ProtectReason(why) for why in protected.get(c.uuid, ())}
        if given:
            reasons[c.uuid].extend(_PROTECT_KEEP[why] for why in ProtectReason if why in given)
    smaller = policy.smaller_is_better
    for uuid in _best(ckpts, policy.save_experiment_best, smaller):
        reasons[uuid].append(KeepReason.EXPERIMENT_BEST)
    by_trial: dict[int, list[CheckpointFacts]] = defaultdict(list)
    for c in ckpts:
        by_trial[c.trial_id].append(c)
    for trial_ckpts in by_trial.values():
        for uuid in _best(trial_ckpts, policy.save_trial_best, smaller):
            reasons[uuid].append(KeepReason.TRIAL_BEST)
        for uuid in _latest(trial_ckpts, policy.save_trial_latest):
            reasons[uuid].append(KeepReason.TRIAL_LATEST)
    delete = tuple(c.uuid for c in ckpts if c.uuid not in reasons)
    keep = {c.uuid: tuple(reasons[c.uuid]) for c in ckpts if c.uuid in reasons}
    return GcPlan(delete=delete, keep=keep)


RETRY_FIRST = timedelta(seconds=30)
RETRY_MAX = timedelta(hours=1)


def retry_delay(failures: int) -> timedelta:
    """How long after its `failures`-th failed deletion a checkpoint is tried again: doubling
    from 30 s, at most an hour, so a storage outage is neither hammered nor forgotten."""
    if failures <= 1:
        return RETRY_FIRST
    return min(RETRY_FIRST * (2 ** min(failures - 1, 16)), RETRY_MAX)
