"""Building searchers from configs: every bad config is a clear error."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.domain.searcher import (
    SearcherConfigError,
    make_searcher,
    restore_searcher,
)

ASHA: dict[str, Any] = {
    "name": "adaptive_asha",
    "metric": "loss",
    "time_metric": "batches",
    "max_time": 100,
    "max_trials": 8,
}


@pytest.mark.parametrize("name", ["custom", "sync_halving", "adaptive", "adaptive_simple"])
def test_removed_searchers_say_so(name: str) -> None:
    with pytest.raises(SearcherConfigError, match=f"the '{name}' searcher has been removed"):
        make_searcher({"name": name, "metric": "m"}, {}, 0)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"name": "bayes", "metric": "m"}, "unknown searcher name 'bayes'"),
        ({"name": "random", "metric": "m"}, "max_trials is required"),
        ({"name": "random", "metric": "m", "max_trials": 0}, "max_trials must be at least 1"),
        ({"name": "random", "metric": "m", "max_trials": "3"}, "must be an integer"),
        ({"name": "random", "metric": "m", "max_trials": 3, "max_concurrent_trials": -1}, ">= 0"),
        ({**ASHA, "time_metric": None}, "needs searcher.time_metric and searcher.max_time"),
        ({**ASHA, "max_time": None, "max_length": {"batches": 100}}, "no longer derives"),
        ({**ASHA, "divisor": 1}, "divisor must be a number > 1"),
        ({**ASHA, "mode": "wild"}, "mode must be one of"),
        ({**ASHA, "bracket_rungs": [0]}, "bracket_rungs must be a list"),
        ({**ASHA, "name": "async_halving"}, "num_rungs is required"),
        ({**ASHA, "promotions": "yes"}, "promotions must be true or false"),
        ({**ASHA, "sampler": "bohb"}, "sampler must be one of random, tpe"),
        ({"name": "tpe", "metric": "m", "max_trials": 3, "n_startup_trials": -1}, ">= 0"),
    ],
)
def test_bad_configs(config: dict[str, Any], message: str) -> None:
    with pytest.raises(SearcherConfigError, match=message):
        make_searcher(config, {}, 0)


def test_deprecated_keys_are_accepted_and_ignored() -> None:
    config = {
        **ASHA,
        "max_length": {"batches": 100},
        "stop_once": True,
        "source_trial_id": 4,
        "source_checkpoint_uuid": None,
    }
    assert len(make_searcher(config, {}, 0).initial_operations()) == 8


def test_a_snapshot_of_another_searcher_is_refused() -> None:
    snapshot = make_searcher({"name": "single", "metric": "m"}, {}, 0).snapshot()
    with pytest.raises(SearcherConfigError, match="snapshot is of a 'single' searcher"):
        restore_searcher(ASHA, {}, snapshot)
