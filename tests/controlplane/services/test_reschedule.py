"""services/reschedule.py: the marks a session carries until it commits."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from controlplane.services.reschedule import (
    mark_arrival,
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
    assert take_pokes(s) == (set(), {"gpu": 2, "cpu": 0})
    assert take_pokes(s) == (set(), {})  # taken: cleared


def test_a_pool_marked_for_a_pass_needs_no_arrival_check() -> None:
    s = _session()
    mark_arrival(s, "gpu", 1)
    mark_arrival(s, "cpu", 1)
    mark_reschedule(s, "gpu")
    assert take_pokes(s) == ({"gpu"}, {"cpu": 1})
    s = _session()
    mark_arrival(s, "gpu", 1)
    mark_reschedule(s)  # every pool
    assert take_pokes(s) == ({None}, {})


def test_whoever_takes_the_marks_without_arrivals_gets_their_pools_too() -> None:
    """Code that commits a session and knows nothing of arrivals still wakes their pools."""
    s = _session()
    mark_arrival(s, "gpu", 1)
    mark_reschedule(s, "cpu")
    assert take_reschedule(s) == {"gpu", "cpu"}
    assert take_pokes(s) == (set(), {})
