"""Searcher configs (reference §4.1-4.6 and §5.3), a union keyed on `name`.

Runnable in 0.38: single, random, grid, async_halving, adaptive_asha; and ours, tpe. The removed
searchers (custom, sync_halving, adaptive, adaptive_simple, and pbt) and unknown names are
rejected with an error at ``searcher.name``. ASHA's `promotions` key is ours (docs/searchers.md).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from .models_base import ConfigModel, MaxLength, config_error, fail_at

SEARCHER_NAMES = ("single", "random", "grid", "async_halving", "adaptive_asha", "tpe")

REMOVED_SEARCHERS = {
    "custom": "custom searchers (including DeepSpeed autotune) were removed in 0.38.0",
    "sync_halving": "use async_halving or adaptive_asha instead",
    "adaptive": "use adaptive_asha instead",
    "adaptive_simple": "use adaptive_asha instead",
    "pbt": "use adaptive_asha or random instead",
}

DEFAULT_MAX_CONCURRENT_TRIALS = 16


class _SearcherBase(ConfigModel):
    metric: str | None = Field(
        default=None,
        description="Name of the validation metric the searcher optimises (eventually required).",
    )
    smaller_is_better: bool = Field(
        default=True, description="Whether a smaller metric value is better."
    )
    source_trial_id: int | None = Field(
        default=None, description="Warm-start every trial from this trial's latest checkpoint."
    )
    source_checkpoint_uuid: str | None = Field(
        default=None, description="Warm-start every trial from this checkpoint."
    )
    max_length: MaxLength | None = Field(
        default=None,
        description="Deprecated: trial length, an integer or {batches|records|epochs: N}.",
    )


def _max_concurrent() -> Any:
    return Field(
        default=DEFAULT_MAX_CONCURRENT_TRIALS,
        ge=0,
        description="Most trials running at once (0 means no limit).",
    )


class SingleSearcher(_SearcherBase):
    """Train one trial with the given (const) hyperparameters."""

    name: Literal["single"] = Field(description="Always `single`.")


class RandomSearcher(_SearcherBase):
    """Sample `max_trials` hyperparameter settings at random."""

    name: Literal["random"] = Field(description="Always `random`.")
    max_trials: int = Field(ge=1, description="Number of trials to create.")
    max_concurrent_trials: int = _max_concurrent()


class GridSearcher(_SearcherBase):
    """Train one trial per point of the hyperparameter grid."""

    name: Literal["grid"] = Field(description="Always `grid`.")
    max_concurrent_trials: int = _max_concurrent()


class _AshaFields(_SearcherBase):
    max_trials: int = Field(ge=1, description="Number of trials to create.")
    divisor: float = Field(
        default=4, gt=1, description="Fraction of trials kept at each rung is 1/divisor."
    )
    max_concurrent_trials: int = _max_concurrent()
    time_metric: str | None = Field(
        default=None,
        description="Validation metric that measures training progress, e.g. batches (required).",
    )
    max_time: int | None = Field(
        default=None, ge=1, description="A trial's budget in time_metric units (required)."
    )
    stop_once: bool = Field(default=False, description="Deprecated and ignored.")
    promotions: bool = Field(
        default=False,
        description=(
            "Resolute: pause losers instead of closing them and resume (promote) them from their"
            " checkpoint when they earn the next rung. false is Determined 0.38's behaviour."
        ),
    )
    promotion_rule: Literal["rungs", "curve"] = Field(
        default="rungs",
        description=(
            "Resolute, with promotions: which trial trains next. `rungs`: ASHA's (a trial goes on"
            " once it is in the top 1/divisor of its rung); `curve`: the trial expected to reach"
            " the best result at max_time, from its learning curve and the search's others."
        ),
    )
    sampler: Literal["random", "tpe"] | None = Field(
        default=None,
        description=(
            "Resolute: how new trials are drawn, `random` (Determined's ASHA) or `tpe` (a TPE"
            " model fitted on the rung results, BOHB-style). Default: `tpe` with promotions,"
            " `random` without."
        ),
    )

    @model_validator(mode="after")
    def _needs_time(self) -> _AshaFields:
        # Determined 0.38 (AssertCurrent) refuses ASHA without both, even with max_length.
        name = self.name  # type: ignore[attr-defined]
        message = (
            f"Field required: the `{name}` searcher requires `max_time` and `time_metric` to be"
            " set (the deprecated max_length is not enough; report the time metric in your"
            " validation metrics)"
        )
        missing = [key for key in ("time_metric", "max_time") if getattr(self, key) is None]
        if missing:
            raise fail_at([((key,), message, None) for key in missing])
        if self.promotion_rule == "curve" and not self.promotions:
            raise fail_at(
                [
                    (
                        ("promotion_rule",),
                        "promotion_rule: curve needs promotions: true (it pauses and resumes"
                        " trials)",
                        self.promotion_rule,
                    )
                ]
            )
        if self.sampler is None:
            # The expanded config says which sampler runs; Determined's unless promotions are on.
            self.sampler = "tpe" if self.promotions else "random"
        return self


class AsyncHalvingSearcher(_AshaFields):
    """Asynchronous successive halving (stopping-based ASHA)."""

    name: Literal["async_halving"] = Field(description="Always `async_halving`.")
    num_rungs: int = Field(ge=1, description="Number of rungs.")


class AdaptiveAshaSearcher(_AshaFields):
    """Several ASHA brackets run side by side, as a tournament."""

    name: Literal["adaptive_asha"] = Field(description="Always `adaptive_asha`.")
    mode: Literal["aggressive", "standard", "conservative"] | None = Field(
        default=None,
        description=(
            "How many brackets to run. Default: `standard` (Determined's); `aggressive` (one"
            " bracket) with promotions, where a trial paused too early can still be resumed."
        ),
    )
    max_rungs: int = Field(default=5, ge=1, description="Most rungs in a bracket.")
    bracket_rungs: list[int] = Field(
        default_factory=list, description="Explicit rung counts per bracket (override mode)."
    )

    @model_validator(mode="after")
    def _default_mode(self) -> AdaptiveAshaSearcher:
        if self.mode is None:
            self.mode = "aggressive" if self.promotions else "standard"
        return self


class TpeSearcher(_SearcherBase):
    """Bayesian search with Optuna's TPE sampler (Resolute; not in Determined)."""

    name: Literal["tpe"] = Field(description="Always `tpe`.")
    max_trials: int = Field(ge=1, description="Number of trials to create.")
    max_concurrent_trials: int = _max_concurrent()
    n_startup_trials: int = Field(
        default=10, ge=0, description="Trials sampled at random before TPE takes over."
    )


class _RejectedSearcher(ConfigModel):
    """Catches a missing, unknown or removed searcher name and reports it at `name`."""

    model_config = ConfigDict(extra="allow")

    name: Any = Field(default=None, validate_default=True, description="The bad name.")

    @field_validator("name")
    @classmethod
    def _reject(cls, value: Any) -> Any:
        expected = ", ".join(SEARCHER_NAMES)
        if value is None:
            raise config_error(f"Field required (one of {expected})")
        if isinstance(value, str) and value in REMOVED_SEARCHERS:
            raise config_error(
                f"the {value!r} searcher has been removed and is not valid for new experiments:"
                f" {REMOVED_SEARCHERS[value]}"
            )
        raise config_error(f"unknown searcher name {value!r}; expected one of {expected}")


def _searcher_kind(value: Any) -> str:
    if isinstance(value, dict):
        name = value.get("name")
        if isinstance(name, str) and name in SEARCHER_NAMES:
            return f"<{name}>"
        return "<rejected>"
    if isinstance(value, _SearcherBase):
        return f"<{value.name}>"  # type: ignore[attr-defined]
    return "<rejected>"


SearcherConfig = Annotated[
    Annotated[SingleSearcher, Tag("<single>")]
    | Annotated[RandomSearcher, Tag("<random>")]
    | Annotated[GridSearcher, Tag("<grid>")]
    | Annotated[AsyncHalvingSearcher, Tag("<async_halving>")]
    | Annotated[AdaptiveAshaSearcher, Tag("<adaptive_asha>")]
    | Annotated[TpeSearcher, Tag("<tpe>")]
    | Annotated[_RejectedSearcher, Tag("<rejected>")],
    Discriminator(_searcher_kind),
]
"""Any searcher config; the `name` key picks the model."""

RunnableSearcher = (
    SingleSearcher
    | RandomSearcher
    | GridSearcher
    | AsyncHalvingSearcher
    | AdaptiveAshaSearcher
    | TpeSearcher
)
