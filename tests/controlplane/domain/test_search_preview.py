"""What `det preview-search` shows: how many trials train for how long, per searcher."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.search_preview import TO_COMPLETION, TrialGroup, Unit, summarize
from controlplane.domain.searcher.errors import SearcherConfigError

SPACE = {
    "a": {"type": "categorical", "vals": [1, 2, 3]},
    "b": {"type": "int", "minval": 1, "maxval": 4, "count": 2},
}
ASHA = {"metric": "x", "time_metric": "batches", "max_time": 1600}


def groups(found: list[TrialGroup]) -> list[tuple[int, str | None, int | None, bool]]:
    return [(g.count, g.unit.name, g.unit.value, g.unit.max_length) for g in found]


@pytest.mark.parametrize(
    ("searcher", "expected"),
    [
        ({"name": "single"}, [(1, None, None, True)]),
        ({"name": "single", "max_length": {"epochs": 3}}, [(1, "epochs", 3, False)]),
        ({"name": "random", "max_trials": 7}, [(7, None, None, True)]),
        ({"name": "random", "max_trials": 7, "max_length": 50}, [(7, "batches", 50, False)]),
        ({"name": "tpe", "max_trials": 4}, [(4, None, None, True)]),
        ({"name": "grid"}, [(6, None, None, True)]),
        # 16 trials, divisor 4: 12 stop at rung 0, 3 at rung 1, 1 trains to max_time
        ({"name": "async_halving", "num_rungs": 3, "max_trials": 16, **ASHA},
         [(12, "batches", 100, False), (3, "batches", 400, False), (1, "batches", 1600, False)]),
        ({"name": "adaptive_asha", "max_trials": 16, "mode": "aggressive", "max_rungs": 3, **ASHA},
         [(12, "batches", 100, False), (3, "batches", 400, False), (1, "batches", 1600, False)]),
        ({"name": "adaptive_asha", "max_trials": 4, "promotions": True, "promotion_rule": "curve",
          **ASHA}, [(4, None, None, True)]),
    ],
)  # fmt: skip
def test_summaries(searcher: dict[str, Any], expected: list[tuple[Any, ...]]) -> None:
    assert groups(summarize({"metric": "x", **searcher}, SPACE)) == expected


def test_asha_without_its_time_metric_is_refused() -> None:
    with pytest.raises(SearcherConfigError, match="time_metric"):
        summarize({"name": "adaptive_asha", "metric": "x", "max_trials": 4}, SPACE)


@given(
    st.integers(1, 500),
    st.sampled_from(["aggressive", "standard", "conservative"]),
    st.integers(2, 6),
    st.integers(1, 5),
)
def test_adaptive_asha_runs_every_trial_once(
    trials: int, mode: str, div: int, rungs_limit: int
) -> None:
    searcher = {"name": "adaptive_asha", "max_trials": trials, "mode": mode,
                "divisor": div, "max_rungs": rungs_limit, **ASHA}  # fmt: skip
    found = summarize(searcher, SPACE)
    assert sum(g.count for g in found) >= trials  # brackets get at least one trial each
    assert all(g.unit.name == "batches" and 1 <= (g.unit.value or 0) <= 1600 for g in found)
    assert [g.unit.value for g in found] == sorted({g.unit.value for g in found})
    assert found[-1].unit == Unit("batches", 1600, False) and TO_COMPLETION not in {
        g.unit for g in found
    }
