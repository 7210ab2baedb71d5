"""Adaptive ASHA's brackets (reference §4.6: adaptive_asha_test's cases)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.domain.searcher import Create, make_searcher
from controlplane.domain.searcher.brackets import (
    Bracket,
    bracket_max_concurrent,
    bracket_max_trials,
    make_brackets,
    max_rungs,
    mode_rungs,
)


@pytest.mark.parametrize(
    ("max_trials", "divisor", "rungs", "trials"),
    [
        (20, 3, [3, 2, 1], [12, 5, 3]),
        (50, 3, [4, 3], [35, 15]),
        (50, 4, [3, 2], [37, 13]),
        (100, 4, [4, 3, 2], [70, 22, 8]),
        (2, 4, [3, 2, 1], [1, 1, 1]),  # every bracket gets at least one trial
    ],
)
def test_trials_per_bracket(
    max_trials: int, divisor: float, rungs: list[int], trials: list[int]
) -> None:
    assert bracket_max_trials(max_trials, divisor, rungs) == trials


@pytest.mark.parametrize(
    ("max_concurrent", "divisor", "trials", "concurrent"),
    [
        (0, 3, [9, 3, 1], [3, 3, 3]),
        (11, 3, [9, 3, 1], [4, 4, 3]),
        (0, 4, [40, 10], [10, 10]),
        (1, 4, [40, 10], [1, 1]),  # at least one per bracket
        (16, 4, [7, 3], [8, 8]),
    ],
)
def test_concurrency_per_bracket(
    max_concurrent: int, divisor: float, trials: list[int], concurrent: list[int]
) -> None:
    assert bracket_max_concurrent(max_concurrent, divisor, trials) == concurrent


@pytest.mark.parametrize(
    ("mode", "rungs", "brackets"),
    [
        ("aggressive", 4, [4]),
        ("standard", 4, [2, 3, 4]),
        ("standard", 5, [3, 4, 5]),
        ("standard", 1, [1]),
        ("conservative", 3, [1, 2, 3]),
    ],
)
def test_mode_rungs(mode: str, rungs: int, brackets: list[int]) -> None:
    assert mode_rungs(mode, rungs) == brackets


@pytest.mark.parametrize(
    ("limit", "max_time", "max_trials", "divisor", "rungs"),
    [
        (5, 100, 10, 4, 2),
        (5, 1000, 10, 3, 3),
        (5, 10**6, 10**6, 4, 5),
        (5, 1000, 1000, 10, 3),  # log10(1000) is 2.999... in floating point, as in Go
        (2, 10**6, 10**6, 2, 2),
        (5, 1, 1, 4, 1),
    ],
)
def test_max_rungs(limit: int, max_time: int, max_trials: int, divisor: float, rungs: int) -> None:
    assert max_rungs(limit, max_time, max_trials, divisor) == rungs


@pytest.mark.parametrize(
    ("kwargs", "brackets"),
    [
        (
            {
                "mode": "standard",
                "max_time": 100,
                "max_trials": 10,
                "max_concurrent": 2,
                "divisor": 4,
            },
            [Bracket(2, 7, 1), Bracket(1, 3, 1)],
        ),
        (
            {
                "mode": "conservative",
                "max_time": 1000,
                "max_trials": 10,
                "max_concurrent": 5,
                "divisor": 3,
            },
            [Bracket(3, 7, 2), Bracket(2, 2, 2), Bracket(1, 1, 1)],
        ),
    ],
)
def test_make_brackets(kwargs: dict[str, Any], brackets: list[Bracket]) -> None:
    assert make_brackets(max_rungs_limit=5, bracket_rungs=[], **kwargs) == brackets


def test_explicit_bracket_rungs_override_the_mode_and_are_sorted_descending() -> None:
    got = make_brackets(
        max_trials=50,
        max_time=100,
        divisor=4,
        mode="aggressive",
        max_rungs_limit=5,
        bracket_rungs=[2, 3],
        max_concurrent=4,
    )
    assert got == [Bracket(3, 37, 2), Bracket(2, 13, 2)]


def test_adaptive_asha_starts_each_bracket_with_its_concurrency() -> None:
    config = {
        "name": "adaptive_asha",
        "metric": "loss",
        "time_metric": "batches",
        "max_time": 1000,
        "max_trials": 10,
        "divisor": 3,
        "mode": "conservative",
        "max_concurrent_trials": 5,
    }
    ops = make_searcher(config, {}, 1).initial_operations()
    assert len(ops) == 5 and all(isinstance(op, Create) for op in ops)
