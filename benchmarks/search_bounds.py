"""The screening bound: the fewest epochs in which a search 4 trials wide could reach a target
with the configurations it proposed, had it known each one's future after its first epoch.

A search must train a configuration for at least one epoch before it knows anything of it, and
with every slot busy it can start at most `slots` of them a round. So configuration i (from 0,
in the order proposed) starts in round 1 + i // slots at the earliest, and if it first reaches
the target at its epoch h, no search that proposed it i-th gets there before round
1 + i // slots + h - 1. Used by benchmarks/search_efficiency.py (a row's own proposals, in the
same run) and benchmarks/search_screen_bound.py (random and hypothetical streams).
"""

from __future__ import annotations

from collections.abc import Sequence

SLOTS = 4


def first_hit(curve: Sequence[float], target: float) -> int | None:
    """The epoch (from 1) of the curve's first report >= target, None if none."""
    return next((epoch for epoch, acc in enumerate(curve, 1) if acc >= target), None)


def screen_bound(hits: Sequence[int | None], slots: int = SLOTS) -> int | None:
    """The fewest epochs, all slots together, in which a search that proposed configurations
    with these first hits (in this order; None: never) could report the target, or None.

    Configuration i starts in round 1 + i // slots at the earliest and gets there in round
    start + hit - 1; the bound counts `slots` epochs for every round before the first such round
    and one for that round (its report first)."""
    best: int | None = None
    for i, hit in enumerate(hits):
        start = 1 + i // slots
        if best is not None and start >= best:
            break  # every later configuration starts too late to get there sooner
        if hit is not None:
            end = start + hit - 1
            best = end if best is None else min(best, end)
    return None if best is None else slots * (best - 1) + 1
