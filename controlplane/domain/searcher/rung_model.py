"""BOHB-style sampling for ASHA: new trials from a TPE model fitted on the rung results.

Random search inside ASHA spends most of its trials on regions the first rungs have already
shown to be poor. BOHB (Falkner et al., 2018) instead fits a model on the results of the
highest rung that holds enough of them and samples where that model expects good trials. Here
the model is Optuna's TPE sampler used as a library, as the `tpe` searcher uses it:

- until `min_points` trials have a result (one more than the number of searched
  hyperparameters, as BOHB), a point is drawn at random with exactly the draws `space.sample`
  makes, so the first trials are those of the random-sampling ASHA with the same seed;
- then a `random_fraction` of the points stay random (BOHB's safeguard against a model that
  has locked onto one region) and the others come from TPE fitted on every trial, ranked by the
  highest rung it reached and then by its result there (`rungs.ladder`).

BOHB fits only the highest budget with enough results. Every trial there has already beaten the
first rung, so the model never sees where trials fail (a learning rate that diverges ranks in
the middle of nowhere) and keeps proposing such points; the ladder keeps those trials in, below
every trial that went further, and the model can use it as soon as the first results come in.

The model keeps no state of its own: the rung results and each trial's point are in the ASHA
snapshot, the study is rebuilt for every new point and its seed is drawn from the searcher's
generator, so a restored search proposes what the original would have.
"""

from __future__ import annotations

import json
import random
import warnings
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import create_trial

from .space import MAX_SEED, leaves
from .tpe import distribution, hparams_from_params

RANDOM_FRACTION = 1 / 3
"""BOHB's default share of random points once the model is in use."""

MAX_FITTED = 100
"""At most this many trials go into the model: TPE's cost grows with its points (fitted on all
of 1,000 trials it cost about 2.5 times the CPU per trial)."""

Point = dict[str, Any]
"""An Optuna point: the JSON of a leaf's path -> int, float (a log leaf's exponent) or the index
of a categorical value."""


class RungModel:
    def __init__(
        self,
        space: dict[str, Any],
        *,
        min_points: int | None = None,
        random_fraction: float = RANDOM_FRACTION,
    ) -> None:
        self.leaves = leaves(space)
        self.distributions: dict[str, BaseDistribution] = {}
        for path, hp in self.leaves:
            dist = distribution(hp)
            if dist is not None:
                self.distributions[json.dumps(path)] = dist
        self.min_points = len(self.distributions) + 1 if min_points is None else min_points
        self.random_fraction = random_fraction

    def _random(self, rng: random.Random) -> Point:
        """A uniform point drawn with the same calls, in the same order, as `space.sample`."""
        point: Point = {}
        for path, hp in self.leaves:
            kind = hp["type"]
            key = json.dumps(path)
            if kind == "int":
                point[key] = rng.randint(int(hp["minval"]), int(hp["maxval"]))
            elif kind in ("double", "log"):
                point[key] = rng.uniform(float(hp["minval"]), float(hp["maxval"]))
            elif kind == "categorical":
                point[key] = rng.randrange(len(hp["vals"]))  # what rng.choice draws
        return point

    def propose(
        self, rng: random.Random, ranked: list[tuple[Point, float]]
    ) -> tuple[dict[str, Any], Point]:
        """The hyperparameters of a new trial and its point.

        `ranked`: the (point, score) of every trial with a result, smaller is better
        (`rungs.ladder`).
        """
        too_few = len(ranked) < self.min_points
        if too_few or not self.distributions or rng.random() < self.random_fraction:
            point = self._random(rng)
        else:
            point = self._fitted(rng.randrange(MAX_SEED), thin(ranked, MAX_FITTED))
        return hparams_from_params(self.leaves, point), point

    def _fitted(self, seed: int, found: list[tuple[Point, float]]) -> Point:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=0, multivariate=True)
            study = optuna.create_study(direction="minimize", sampler=sampler)
            study.add_trials(
                [
                    create_trial(params=point, distributions=self.distributions, value=value)
                    for point, value in found
                ]
            )
            return dict(study.ask(self.distributions).params)


def thin(ranked: list[tuple[Point, float]], limit: int) -> list[tuple[Point, float]]:
    """At most `limit` of `ranked` (best first): the best half of the limit and an evenly
    spread sample of the rest, so the model still sees where the failures are."""
    if len(ranked) <= limit:
        return ranked
    top = limit // 2
    rest = ranked[top:]
    step = len(rest) / (limit - top)
    return ranked[:top] + [rest[int(i * step)] for i in range(limit - top)]
