"""No scheduler ever places new work on an agent that may not take it.

An agent that is draining (a user drained it, a spot interruption notice came, or it is
disconnected: the master's snapshot shows all three as draining) or disabled keeps what runs on
it and gets nothing new, whichever scheduler the pool uses and whatever else waits.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from resource_pools.types import PoolSnapshot
from tests.resource_pools.test_job_queue import SCHEDULERS, AnyScheduler
from tests.resource_pools.test_priority import snapshots


@settings(max_examples=300, deadline=None)
@given(snapshots(), st.sampled_from(SCHEDULERS))
def test_no_start_lands_on_a_draining_or_disabled_agent(
    snapshot: PoolSnapshot, scheduler: AnyScheduler
) -> None:
    closed = {a.id for a in snapshot.agents if a.draining or not a.enabled}
    plan = scheduler.schedule(snapshot)
    for start in plan.start:
        placed = {p.agent_id for p in start.placements}
        assert not placed & closed, (start, sorted(closed))
