"""`name: tpe`: Bayesian search with Optuna's TPE sampler, used as a library.

There is no second store: the study lives in memory and is rebuilt, before every new trial, from
this searcher's own observations (each trial's parameters and best metric, kept in the snapshot
the master persists). The sampler's seed for each new trial is drawn from the searcher's seeded
generator, so a search repeats exactly and a restored searcher picks what the original would
have. Trials still running are given to the sampler as running (constant liar), so parallel
trials spread out instead of sampling the same spot.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import TrialState, create_trial

from .base import Context
from .config_values import concurrent, config_bool, config_int, config_str, max_trials
from .errors import SearcherConfigError
from .ops import Op
from .rungs import number, ranked_value
from .space import Path, leaves, set_path

optuna.logging.set_verbosity(optuna.logging.WARNING)

DEFAULT_STARTUP_TRIALS = 10


def distribution(hp: dict[str, Any]) -> BaseDistribution | None:
    """The Optuna distribution of one leaf (None for a const); log leaves are searched on their
    exponent, categorical ones on the index of their value."""
    kind = hp["type"]
    if kind == "const":
        return None
    if kind == "int":
        return IntDistribution(int(hp["minval"]), int(hp["maxval"]))
    if kind in ("double", "log"):
        return FloatDistribution(float(hp["minval"]), float(hp["maxval"]))
    if kind == "categorical":
        return CategoricalDistribution(list(range(len(hp["vals"]))))
    raise SearcherConfigError(f"unknown hyperparameter type {kind!r}")


def hparams_from_params(leaves: list[tuple[Path, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """The hyperparameters of an Optuna point (keys: the JSON of each leaf's path)."""
    out: dict[str, Any] = {}
    for path, hp in leaves:
        kind = hp["type"]
        raw = params.get(json.dumps(path))
        if kind == "const":
            value = hp.get("val")
        elif kind == "int":
            value = int(raw)
        elif kind == "double":
            value = float(raw)
        elif kind == "log":
            value = float(hp.get("base", 10.0)) ** float(raw)
        else:
            value = hp["vals"][int(raw)]
        set_path(out, path, value)
    return out


class TpeSearch:
    def __init__(
        self,
        space: dict[str, Any],
        *,
        metric: str,
        smaller_is_better: bool,
        max_trials: int,
        max_concurrent: int,
        n_startup_trials: int,
    ) -> None:
        self.leaves = leaves(space)
        self.distributions: dict[str, BaseDistribution] = {}
        for path, hp in self.leaves:
            dist = distribution(hp)
            if dist is not None:
                self.distributions[json.dumps(path)] = dist
        self.metric = metric
        self.smaller_is_better = smaller_is_better
        self.max_trials = max_trials
        self.max_concurrent = max_concurrent
        self.n_startup_trials = n_startup_trials
        self.created = 0
        # request id -> {"params": ..., "value": best ranked value or None, "state": ...}
        self.trials: dict[str, dict[str, Any]] = {}

    @classmethod
    def from_config(cls, config: dict[str, Any], space: dict[str, Any]) -> TpeSearch:
        startup = config_int(config, "n_startup_trials", DEFAULT_STARTUP_TRIALS)
        if startup < 0:
            raise SearcherConfigError("searcher.n_startup_trials must be >= 0")
        return cls(
            space,
            metric=config_str(config, "metric"),
            smaller_is_better=config_bool(config, "smaller_is_better", True),
            max_trials=max_trials(config),
            max_concurrent=concurrent(config),
            n_startup_trials=startup,
        )

    def _study(self, seed: int) -> optuna.Study:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(
                seed=seed, n_startup_trials=self.n_startup_trials, constant_liar=True
            )
        study = optuna.create_study(direction="minimize", sampler=sampler)
        for record in self.trials.values():
            params = record["params"]
            dists = {name: self.distributions[name] for name in params}
            if record["state"] == "complete":
                trial = create_trial(params=params, distributions=dists, value=record["value"])
            elif record["state"] == "running":
                trial = create_trial(params=params, distributions=dists, state=TrialState.RUNNING)
            else:
                trial = create_trial(params=params, distributions=dists, state=TrialState.FAIL)
            study.add_trial(trial)
        return study

    def _hparams(self, params: dict[str, Any]) -> dict[str, Any]:
        return hparams_from_params(self.leaves, params)

    def _create(self, ctx: Context) -> Op:
        seed = ctx.rng.randrange(2**31)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            trial = self._study(seed).ask(self.distributions)
        params = dict(trial.params)
        op = ctx.create(self._hparams(params))
        self.created += 1
        self.trials[op.request_id] = {"params": params, "value": None, "state": "running"}
        return op

    def initial(self, ctx: Context) -> list[Op]:
        count = self.max_trials
        if self.max_concurrent > 0:
            count = min(count, self.max_concurrent)
        return [self._create(ctx) for _ in range(count)]

    def trial_created(self, ctx: Context, request_id: str) -> list[Op]:
        return []

    def validation(self, ctx: Context, request_id: str, metrics: dict[str, Any]) -> list[Op]:
        record = self.trials[request_id]
        reported = number(metrics, self.metric, "searcher metric")
        value = ranked_value(reported, self.smaller_is_better)
        if record["value"] is None or value < record["value"]:
            record["value"] = value
        return []

    def exited_early(self, ctx: Context, request_id: str, reason: str) -> list[Op]:
        if reason == "INVALID_HP":
            self.created -= 1
            self.trials[request_id]["value"] = None
        return []

    def trial_closed(self, ctx: Context, request_id: str) -> list[Op]:
        record = self.trials[request_id]
        record["state"] = "complete" if record["value"] is not None else "fail"
        if self.created < self.max_trials:
            return [self._create(ctx)]
        return []

    def progress(self, ctx: Context) -> float:
        done = ctx.closed_count() + sum(ctx.open_progress().values())
        return done / self.max_trials

    def snapshot(self) -> dict[str, Any]:
        return {"created": self.created, "trials": {k: dict(v) for k, v in self.trials.items()}}

    def load(self, state: dict[str, Any]) -> None:
        self.created = int(state["created"])
        self.trials = {str(k): dict(v) for k, v in state["trials"].items()}
