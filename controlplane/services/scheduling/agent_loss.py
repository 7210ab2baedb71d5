"""When a disconnected agent is given up on (pure).

A disconnected agent keeps its allocations for its pool's `agent_reconnect_wait`. An agent the
master has no record of, but whose allocations the database holds, is one that has not come
back since the master (re)started: it gets the same wait, counted from the master's start.
Past the wait its allocations end with AGENT_FAILED (not counted against max_restarts) and
the agent is forgotten.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from controlplane.services.scheduling.registry import AgentHandle
from resource_pools.config import format_go_duration


def agents_past_reconnect_wait(
    handles: Iterable[AgentHandle],
    placed_on: Iterable[str],
    *,
    now: datetime,
    master_started_at: datetime,
    wait: timedelta,
) -> dict[str, str]:
    """Agent id → why it is lost, for every agent of the pool whose wait has run out.

    ``handles``: the pool's agents in the registry; ``placed_on``: the agents named by the
    pool's live allocations.
    """
    lost: dict[str, str] = {}
    known: set[str] = set()
    for handle in handles:
        known.add(handle.id)
        if handle.connected:
            continue
        since = handle.disconnected_at or master_started_at
        if now - since >= wait:
            lost[handle.id] = f"it did not reconnect within {format_go_duration(wait)}"
    if now - master_started_at >= wait:
        for agent_id in sorted(set(placed_on) - known):
            lost[agent_id] = (
                f"it did not reconnect within {format_go_duration(wait)} of the master's start"
            )
    return lost


def refuses_reconnect(
    *,
    known: bool,
    has_allocations: bool,
    now: datetime,
    master_started_at: datetime,
    wait: timedelta,
) -> bool:
    """Determined tells an agent that asks to reconnect but is unknown to restart afresh.

    Here the master keeps no agent records across its own restarts, so during the first
    reconnect wait after a start any agent is welcome; an agent with allocations in the
    database is always welcome (it reattaches them).
    """
    return not known and not has_allocations and now - master_started_at >= wait
