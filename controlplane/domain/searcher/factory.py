"""Build a searcher from the expanded experiment config, or restore one from its snapshot."""

from __future__ import annotations

from typing import Any

from controlplane.domain.limits import MAX_GRID_TRIALS

from .base import Searcher
from .config_values import concurrent, max_trials
from .errors import SearcherConfigError
from .grid_search import GridSearch
from .random_search import RandomSearch
from .rng import new_rng
from .space import grid_size

RUNNABLE = ("single", "random", "grid", "async_halving", "adaptive_asha", "tpe")
REMOVED = {
    "custom": "custom searchers (including DeepSpeed autotune) were removed in 0.38.0",
    "sync_halving": "use async_halving or adaptive_asha instead",
    "adaptive": "use adaptive_asha instead",
    "adaptive_simple": "use adaptive_asha instead",
    "pbt": "use adaptive_asha or random instead",
}


def check_grid_size(hyperparameters: dict[str, Any]) -> int:
    size = grid_size(hyperparameters)
    if size > MAX_GRID_TRIALS:
        raise SearcherConfigError(
            f"the hyperparameter grid has {size} points; at most {MAX_GRID_TRIALS} are supported"
            " (lower the counts)"
        )
    return size


def _method(config: dict[str, Any], space: dict[str, Any]) -> Any:
    name = config.get("name")
    if name in REMOVED:
        raise SearcherConfigError(f"the {name!r} searcher has been removed: {REMOVED[name]}")
    if name == "single":
        return RandomSearch(space, max_trials=1, max_concurrent=1)
    if name == "random":
        return RandomSearch(space, max_trials(config), concurrent(config))
    if name == "grid":
        check_grid_size(space)
        return GridSearch(space, concurrent(config))
    if name in ("async_halving", "adaptive_asha"):
        from .asha_config import asha_method

        return asha_method(config, space)
    if name == "tpe":
        from .tpe import TpeSearch

        return TpeSearch.from_config(config, space)
    raise SearcherConfigError(
        f"unknown searcher name {name!r}; expected one of {', '.join(RUNNABLE)}"
    )


def make_searcher(
    searcher_config: dict[str, Any], hyperparameters: dict[str, Any], seed: int
) -> Searcher:
    """A new search. `seed` is `reproducibility.experiment_seed`."""
    method = _method(searcher_config, hyperparameters or {})
    return Searcher(str(searcher_config["name"]), method, new_rng(seed))


def restore_searcher(
    searcher_config: dict[str, Any], hyperparameters: dict[str, Any], snapshot: dict[str, Any]
) -> Searcher:
    """The searcher a snapshot was taken of: the same events give the same operations."""
    if snapshot.get("name") != searcher_config.get("name"):
        raise SearcherConfigError(
            f"the snapshot is of a {snapshot.get('name')!r} searcher, the config names"
            f" {searcher_config.get('name')!r}"
        )
    searcher = make_searcher(searcher_config, hyperparameters, seed=0)
    searcher.load(snapshot)
    searcher.method.load(snapshot["method"])  # type: ignore[attr-defined]
    return searcher
