"""services/reschedule.py: the marks a session carries until it commits."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from controlplane.services.reschedule import (
    Pokes,
    mark_arrival,
    mark_freed,
    mark_reschedule,
    take_pokes,
    take_reschedule,
)


def _session() -> Any:
    return SimpleNamespace(info={})  # the marks live in AsyncSession.info only


def test_arrivals_keep_the_fewest_slots_asked_per_pool() -> None:
    s = _session()
    mark_arrival(s, "gpu", 4)
    mark_arrival(s, "gpu", 2)
    mark_arrival(s, "cpu", 0)
    assert take_pokes(s) == Pokes(set(), {"gpu": 2, "cpu": 0}, set())
    assert take_pokes(s) == Pokes(set(), {}, set())  # taken: cleared


def test_a_pool_marked_for_a_pass_needs_no_arrival_check() -> None:
    s = _session()
    mark_arrival(s, "gpu", 1)
    mark_arrival(s, "cpu", 1)
    mark_reschedule(s, "gpu")
    assert take_pokes(s) == Pokes({"gpu"}, {"cpu": 1}, set())
    s = _session()
    mark_arrival(s, "gpu", 1)
    mark_reschedule(s)  # every pool
    assert take_pokes(s) == Pokes({None}, {}, set())


def test_whoever_takes_the_marks_without_arrivals_gets_their_pools_too() -> None:
    """Code that commits a session and knows nothing of arrivals still wakes their pools."""
    s = _session()
    mark_arrival(s, "gpu", 1)
    mark_reschedule(s, "cpu")
    mark_freed(s, "aux")
    assert take_reschedule(s) == {"gpu", "cpu", "aux"}
    assert take_pokes(s) == Pokes(set(), {}, set())


def test_a_pool_only_freed_is_told_so_and_any_other_mark_overrides_it() -> None:
    """Only a pool whose sole news is freed slots may plan on the queue it read last."""
    s = _session()
    mark_freed(s, "gpu")
    mark_freed(s, "cpu")
    mark_freed(s, "aux")
    mark_reschedule(s, "cpu")
    mark_arrival(s, "aux", 1)
    assert take_pokes(s) == Pokes({"cpu"}, {"aux": 1}, {"gpu", "aux"})
    s = _session()
    mark_freed(s, "gpu")
    mark_reschedule(s)  # every pool: each reads its queue
    assert take_pokes(s) == Pokes({None}, {}, set())
