"""What a search would run (Determined's PreviewHPSearch, `det preview-search`): how many
trials train for how long. Pure: an expanded searcher config and hyperparameter space in,
Determined's `SearchSummary` trials (count, unit) out.

- single, random, tpe, grid and ASHA's curve rule: every trial trains to its end (Determined's
  "train to completion"), or for the deprecated `max_length` where one is given;
- async_halving and adaptive_asha (rungs): per bracket, the trials stopped at each rung train
  for that rung's `time_metric` units; the ones that reach the top rung train for `max_time`.
  A rung keeps the best 1/divisor of the trials that reached it, as ASHA promotes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from controlplane.domain.searcher.asha_config import asha_method
from controlplane.domain.searcher.brackets import make_brackets
from controlplane.domain.searcher.config_values import concurrent, divisor, max_trials
from controlplane.domain.searcher.rungs import rung_units
from controlplane.domain.searcher.space import grid_size


@dataclass(frozen=True)
class Unit:
    name: str | None  # a time metric, or a max_length unit (batches, records, epochs)
    value: int | None
    max_length: bool  # trains to its end


@dataclass(frozen=True)
class TrialGroup:
    count: int
    unit: Unit


TO_COMPLETION = Unit(None, None, True)


def _length_unit(searcher: dict[str, Any]) -> Unit:
    """The deprecated max_length, if given ({batches: N}, or N batches); else to completion."""
    length = searcher.get("max_length")
    if isinstance(length, dict) and len(length) == 1:
        [(name, value)] = length.items()
        return Unit(str(name), int(value), False)
    if isinstance(length, int) and not isinstance(length, bool):
        return Unit("batches", length, False)
    return TO_COMPLETION


def _rung_reach(trials: int, rungs: int, div: float) -> list[int]:
    """How many of a bracket's trials reach each rung (never fewer than one)."""
    reach = [trials]
    for _ in range(1, rungs):
        reach.append(max(1, math.floor(reach[-1] / div)))
    return reach


def _asha(searcher: dict[str, Any], space: dict[str, Any]) -> list[TrialGroup]:
    asha_method(searcher, space)  # refuses what ASHA cannot run, as creating it does
    time_metric, max_time = searcher["time_metric"], int(searcher["max_time"])
    div = divisor(searcher)
    if searcher.get("promotion_rule") == "curve":
        return [TrialGroup(max_trials(searcher), TO_COMPLETION)]
    if searcher["name"] == "async_halving":
        brackets = [(int(searcher["num_rungs"]), max_trials(searcher))]
    else:
        brackets = [(b.rungs, b.max_trials) for b in _brackets(searcher)]
    counts: dict[int, int] = {}
    for rungs, trials in brackets:
        units = rung_units(rungs, div, max_time)
        reach = _rung_reach(trials, rungs, div)
        for i in range(rungs):
            stopped = reach[i] - (reach[i + 1] if i + 1 < rungs else 0)
            if stopped > 0:
                counts[units[i]] = counts.get(units[i], 0) + stopped
    return [TrialGroup(n, Unit(time_metric, value, False)) for value, n in sorted(counts.items())]


def _brackets(searcher: dict[str, Any]) -> list[Any]:
    promotions = bool(searcher.get("promotions"))
    return make_brackets(
        max_trials=max_trials(searcher),
        max_time=int(searcher["max_time"]),
        divisor=divisor(searcher),
        mode=searcher.get("mode") or ("aggressive" if promotions else "standard"),
        max_rungs_limit=int(searcher.get("max_rungs") or 5),
        bracket_rungs=list(searcher.get("bracket_rungs") or []),
        max_concurrent=concurrent(searcher),
    )


def summarize(searcher: dict[str, Any], space: dict[str, Any]) -> list[TrialGroup]:
    """The trials the search would run, grouped by how long each trains."""
    name = searcher.get("name")
    if name in ("async_halving", "adaptive_asha"):
        return _asha(searcher, space)
    unit = _length_unit(searcher)
    if name == "single":
        return [TrialGroup(1, unit)]
    if name == "grid":
        return [TrialGroup(grid_size(space), unit)]
    return [TrialGroup(max_trials(searcher), unit)]
