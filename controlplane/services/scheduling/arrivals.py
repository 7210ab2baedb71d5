"""Whether a newly submitted task needs a scheduling pass at once, or can wait for the tick.

Every submission (`POST /api/v1/commands`, a new experiment) used to wake its pool's loop for a
full pass: the queue and the running allocations read, a snapshot built, a plan made. While the
pool has no idle slot, that pass can start nothing the next one could not: the new task waits
behind the slots in use either way, and a slot that frees up wakes the loop itself (an
allocation's end, an agent that connects). So an arrival that needs more slots than the last
pass left idle waits for the pool's tick (at most ``scheduling_interval_s``, 500 ms), as every
arrival does in Determined's scheduler; a burst of submissions to a busy pool then costs one
pass a tick instead of one each. A task of zero slots (a notebook, a TensorBoard) always gets a
pass at once: aux capacity is counted apart from slots.

Pure: the last pass's snapshot and plan in, a number or a decision out.
"""

from __future__ import annotations

from collections.abc import Collection

from resource_pools.types import PoolSnapshot, SchedulingPlan


def idle_slots_after(snapshot: PoolSnapshot, plan: SchedulingPlan, skipped: Collection[str]) -> int:
    """Slots of the pool's schedulable agents that neither run anything nor were just given to
    a start the pass applied (a start it ``skipped`` leaves its slots idle)."""
    free = sum(
        max(0, agent.slots - agent.used_slots) for agent in snapshot.agents if agent.is_schedulable
    )
    taken = sum(
        placement.slots
        for start in plan.start
        if start.allocation_id not in skipped
        for placement in start.placements
    )
    return max(0, free - taken)


def pass_now(idle_slots: int | None, arrival_slots: int) -> bool:
    """Whether a task asking for ``arrival_slots`` needs a pass now, given the idle slots the
    last pass left (None: no pass yet, so nothing is known)."""
    return idle_slots is None or arrival_slots <= 0 or idle_slots >= arrival_slots
