"""Adaptive ASHA's brackets (reference §4.6, Determined's adaptive_asha.go): pure arithmetic."""

from __future__ import annotations

import math
from dataclasses import dataclass

MODES = ("aggressive", "standard", "conservative")


@dataclass(frozen=True)
class Bracket:
    rungs: int
    max_trials: int
    max_concurrent: int


def max_rungs(max_rungs: int, max_time: int, max_trials: int, divisor: float) -> int:
    """min(max_rungs, floor(log_d(max_time)) + 1, floor(log_d(max_trials)) + 1).

    Computed with floating point logs as Determined does (log_10(1000) gives 2.99...: 3 rungs).
    """
    by_time = int(math.log(float(max_time)) / math.log(divisor)) + 1
    by_trials = int(math.log(float(max_trials)) / math.log(divisor)) + 1
    return min(max_rungs, by_time, by_trials)


def mode_rungs(mode: str, rungs: int) -> list[int]:
    if mode == "aggressive":
        return [rungs]
    if mode == "standard":
        return list(range((rungs - 1) // 2 + 1, rungs + 1))
    if mode == "conservative":
        return list(range(1, rungs + 1))
    raise ValueError(f"unknown adaptive mode {mode!r}; expected one of {', '.join(MODES)}")


def bracket_max_trials(max_trials: int, divisor: float, brackets: list[int]) -> list[int]:
    """Split max_trials so each bracket gets about the same total budget."""
    weights = [math.pow(divisor, rungs - 1) / rungs for rungs in brackets]
    total = sum(weights)
    trials = [max(int(weight / total * max_trials), 1) for weight in weights]
    trials[0] += max(max_trials - sum(trials), 0)
    return trials


def bracket_max_concurrent(max_concurrent: int, divisor: float, trials: list[int]) -> list[int]:
    count = len(trials)
    if max_concurrent == 0:
        return [max(trials[-1], int(divisor))] * count
    max_concurrent = max(max_concurrent, count)
    share, remainder = divmod(max_concurrent, count)
    return [share + (1 if index < remainder else 0) for index in range(count)]


def make_brackets(
    *,
    max_trials: int,
    max_time: int,
    divisor: float,
    mode: str,
    max_rungs_limit: int,
    bracket_rungs: list[int],
    max_concurrent: int,
) -> list[Bracket]:
    rungs = list(bracket_rungs)
    if not rungs:
        rungs = mode_rungs(mode, max_rungs(max_rungs_limit, max_time, max_trials, divisor))
    rungs.sort(reverse=True)
    trials = bracket_max_trials(max_trials, divisor, rungs)
    concurrent = bracket_max_concurrent(max_concurrent, divisor, trials)
    return [Bracket(r, t, c) for r, t, c in zip(rungs, trials, concurrent, strict=True)]
