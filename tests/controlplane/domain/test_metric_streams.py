"""What each round of Determined's experiment metric streams sends."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import metric_streams as ms
from controlplane.domain.errors import InvalidArgument


class TestNames:
    def test_each_name_once(self) -> None:
        seen = ms.NamesSeen()
        first = ms.next_names(seen, ["loss", "loss"], {"training": {"loss", "lr"}})
        assert first == {
            "searcherMetrics": ["loss"],
            "trainingMetrics": ["loss", "lr"],
            "validationMetrics": [],
            "metricNames": [
                {"group": "training", "name": "loss"},
                {"group": "training", "name": "lr"},
            ],
        }
        second = ms.next_names(
            seen, ["loss"], {"training": {"loss", "lr"}, "inf%er en/ce": {"x"}, "validation": {"a"}}
        )
        assert second == {
            "searcherMetrics": [],
            "trainingMetrics": [],
            "validationMetrics": ["a"],
            "metricNames": [
                {"group": "inf%er en/ce", "name": "x"},
                {"group": "validation", "name": "a"},
            ],
        }
        assert ms.next_names(seen, [""], {})["searcherMetrics"] == []

    @given(st.lists(st.sets(st.integers(0, 50)), max_size=6))
    def test_batches_are_each_sent_once(self, rounds: list[set[int]]) -> None:
        seen: set[int] = set()
        sent = [b for r in rounds for b in ms.next_batches(seen, r)]
        assert sorted(sent) == sorted(set().union(*rounds)) and len(sent) == len(set(sent))


@pytest.mark.parametrize(
    ("processed", "margin", "window"),
    [(10, 0, (10, 10)), (10, 5, (5, 15)), (3, 10, (0, 13)), (0, 100, (0, 100))],
)
def test_snapshot_window(processed: int, margin: int, window: tuple[int, int]) -> None:
    assert ms.snapshot_window(processed, margin) == window


def test_snapshot_margin_is_at_most_100() -> None:
    with pytest.raises(InvalidArgument, match="margin"):
        ms.snapshot_window(10, 101)


@pytest.mark.parametrize(
    ("metric_type", "group", "any_group", "chosen"),
    [
        ("METRIC_TYPE_TRAINING", None, False, "training"),
        ("METRIC_TYPE_VALIDATION", "ignored", False, "validation"),
        (None, "inf%er en/ce", True, "inf%er en/ce"),
        ("METRIC_TYPE_VALIDATION", "grou%p_c", True, "grou%p_c"),
        ("METRIC_TYPE_PROFILING", None, True, "profiling"),
    ],
)
def test_group_of(metric_type: str | None, group: str | None, any_group: bool, chosen: str) -> None:
    assert ms.group_of(metric_type, group, any_group=any_group) == chosen


@pytest.mark.parametrize(
    ("metric_type", "group", "any_group"),
    [(None, None, True), ("METRIC_TYPE_UNSPECIFIED", None, False), ("BOGUS", "x", True),
     ("METRIC_TYPE_PROFILING", None, False), (None, "x", False)],
)  # fmt: skip
def test_group_of_refuses(metric_type: str | None, group: str | None, any_group: bool) -> None:
    with pytest.raises(InvalidArgument):
        ms.group_of(metric_type, group, any_group=any_group)


class TestSample:
    T = [
        ms.TrialStanding(1, 0.5, 100),
        ms.TrialStanding(2, 0.1, 50),
        ms.TrialStanding(3, None, 400),
        ms.TrialStanding(4, 0.9, 400),
    ]

    @pytest.mark.parametrize(
        ("searcher", "smaller", "top"),
        [
            ("random", True, [2, 1, 4]),
            ("grid", False, [4, 1, 2]),
            ("adaptive_asha", True, [4, 3, 1]),
            ("async_halving", False, [4, 3, 1]),
        ],
    )
    def test_ranking(self, searcher: str, smaller: bool, top: list[int]) -> None:
        how = ms.ranking(searcher)
        assert ms.top_trials(self.T, how, 3, smaller_is_better=smaller) == top

    @pytest.mark.parametrize(("name", "needle"), [("single", "single"), ("nope", "detect")])
    def test_unsampled_searchers(self, name: str, needle: str) -> None:
        with pytest.raises(InvalidArgument, match=needle):
            ms.ranking(name)

    def test_promotions(self) -> None:
        assert ms.promotions([], [2, 1]) == ([2, 1], [])
        assert ms.promotions([2, 1], [2, 4]) == ([4], [1])
        assert ms.promotions([2, 4], [2, 4]) == ([], [])
