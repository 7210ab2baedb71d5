"""Experiment labels: add once, remove, most used first (controlplane/domain/labels.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.labels import add_label, popular_labels, remove_label


@pytest.mark.parametrize(
    ("labels", "label", "added", "removed"),
    [
        ([], "a", ["a"], []),
        (["a"], "a", ["a"], []),
        (["a", "b"], "c", ["a", "b", "c"], ["a", "b"]),
        (["b", "a"], "b", ["b", "a"], ["a"]),
        (["x y", "inf%er"], "inf%er", ["x y", "inf%er"], ["x y"]),
    ],
)
def test_add_and_remove(
    labels: list[str], label: str, added: list[str], removed: list[str]
) -> None:
    assert add_label(labels, label) == added
    assert remove_label(labels, label) == removed


@pytest.mark.parametrize(
    ("per_experiment", "expected"),
    [
        ([], []),
        ([["a"]], ["a"]),
        ([["b"], ["a"]], ["a", "b"]),  # a tie lists by name
        ([["b"], ["a", "b"], ["c", "b", "a"]], ["b", "a", "c"]),
        ([["a", "a"], ["b"], ["b"]], ["b", "a"]),  # a label counts once per experiment
    ],
)
def test_popular_labels(per_experiment: list[list[str]], expected: list[str]) -> None:
    assert popular_labels(per_experiment) == expected


@given(st.lists(st.text(max_size=5), max_size=8), st.text(max_size=5))
def test_add_then_remove_leaves_no_label(labels: list[str], label: str) -> None:
    once = add_label(labels, label)
    assert once.count(label) == max(1, labels.count(label))
    assert add_label(once, label) == once
    assert label not in remove_label(once, label)


@given(st.lists(st.lists(st.sampled_from("abcd"), max_size=4), max_size=6))
def test_popular_labels_counts_are_not_increasing(per_experiment: list[list[str]]) -> None:
    got = popular_labels(per_experiment)
    counts = [sum(label in labels for labels in per_experiment) for label in got]
    assert counts == sorted(counts, reverse=True)
    assert set(got) == {label for labels in per_experiment for label in labels}
