"""async_halving and adaptive_asha from their expanded config dicts (reference §4.5, §4.6)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .asha import AshaSearch
from .brackets import MODES, make_brackets
from .config_values import (
    concurrent,
    config_bool,
    config_int,
    config_str,
    divisor,
    max_trials,
)
from .curves import CurveSearch
from .errors import SearcherConfigError
from .tournament import Tournament

if TYPE_CHECKING:
    from .rung_model import RungModel


def _time(config: dict[str, Any]) -> tuple[str, int]:
    name = config["name"]
    if config.get("time_metric") is None or config.get("max_time") is None:
        raise SearcherConfigError(
            f"the {name} searcher needs searcher.time_metric and searcher.max_time (Determined"
            " 0.38 no longer derives them from the deprecated max_length); report the time metric"
            " in your validation metrics"
        )
    max_time = config_int(config, "max_time")
    if max_time < 1:
        raise SearcherConfigError("searcher.max_time must be at least 1")
    return config_str(config, "time_metric"), max_time


def _common(config: dict[str, Any]) -> dict[str, Any]:
    time_metric, max_time = _time(config)
    return {
        "metric": config_str(config, "metric"),
        "smaller_is_better": config_bool(config, "smaller_is_better", True),
        "time_metric": time_metric,
        "max_time": max_time,
        "divisor": divisor(config),
        "promotions": config_bool(config, "promotions", False),
    }


SAMPLERS = ("random", "tpe")


def _model(config: dict[str, Any], space: dict[str, Any], promotions: bool) -> RungModel | None:
    """`sampler` defaults to `tpe` with promotions and `random` (Determined's ASHA) without."""
    sampler = config.get("sampler")
    if sampler is None:
        sampler = "tpe" if promotions else "random"
    if sampler not in SAMPLERS:
        raise SearcherConfigError(
            f"searcher.sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}"
        )
    if sampler == "random":
        return None
    from .rung_model import RungModel  # imports optuna: only searches that use it pay for it

    return RungModel(space)


RULES = ("rungs", "curve")


def _rule(config: dict[str, Any], promotions: bool) -> str:
    """`promotion_rule`: `rungs` (ASHA's, the default) or `curve` (`curves.CurveSearch`)."""
    rule = config.get("promotion_rule") or "rungs"
    if rule not in RULES:
        raise SearcherConfigError(
            f"searcher.promotion_rule must be one of {', '.join(RULES)}, got {rule!r}"
        )
    if rule == "curve" and not promotions:
        raise SearcherConfigError(
            "searcher.promotion_rule: curve needs promotions: true (it pauses and resumes trials)"
        )
    return rule


def asha_method(
    config: dict[str, Any], space: dict[str, Any]
) -> AshaSearch | Tournament | CurveSearch:
    common = _common(config)
    model = _model(config, space, common["promotions"])
    trials = max_trials(config)
    if _rule(config, common["promotions"]) == "curve":
        # No rungs: num_rungs, divisor, mode, max_rungs and bracket_rungs do not apply.
        return CurveSearch(
            space,
            metric=common["metric"],
            smaller_is_better=common["smaller_is_better"],
            time_metric=common["time_metric"],
            max_time=common["max_time"],
            max_trials=trials,
            max_concurrent=concurrent(config),
            model=model,
        )
    if config["name"] == "async_halving":
        num_rungs = config_int(config, "num_rungs")
        if num_rungs < 1:
            raise SearcherConfigError("searcher.num_rungs must be at least 1")
        return AshaSearch(
            space,
            num_rungs=num_rungs,
            max_trials=trials,
            max_concurrent=concurrent(config),
            model=model,
            **common,
        )
    # Brackets with fewer rungs hedge against a trial that ranks badly early and would have
    # been good: Determined's stopping ASHA loses such a trial for good. With promotions it is
    # only paused and is resumed once the rung has enough results to know better, so one
    # bracket that starts every trial at the smallest rung is the default there.
    mode = config.get("mode") or ("aggressive" if common["promotions"] else "standard")
    if mode not in MODES:
        raise SearcherConfigError(f"searcher.mode must be one of {', '.join(MODES)}, got {mode!r}")
    rungs_limit = config_int(config, "max_rungs", 5)
    if rungs_limit < 1:
        raise SearcherConfigError("searcher.max_rungs must be at least 1")
    bracket_rungs = config.get("bracket_rungs") or []
    if not isinstance(bracket_rungs, list) or any(
        isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in bracket_rungs
    ):
        raise SearcherConfigError("searcher.bracket_rungs must be a list of integers >= 1")
    brackets = make_brackets(
        max_trials=trials,
        max_time=common["max_time"],
        divisor=common["divisor"],
        mode=mode,
        max_rungs_limit=rungs_limit,
        bracket_rungs=bracket_rungs,
        max_concurrent=concurrent(config),
    )
    return Tournament(
        [
            AshaSearch(
                space,
                num_rungs=bracket.rungs,
                max_trials=bracket.max_trials,
                max_concurrent=bracket.max_concurrent,
                model=model,
                **common,
            )
            for bracket in brackets
        ]
    )
