"""Agents as users see them: listing with their slots and containers, enable/disable/drain.

Disabling without drain is Determined's ForceKill: every allocation on the agent is killed
(recorded as the master's kill, so a trial is re-queued elsewhere without using a restart).
With drain, running work finishes and nothing new is placed.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, User
from controlplane.domain.errors import NotFound
from controlplane.services import allocations
from controlplane.services.scheduling.placements import PlacedContainer, live_containers
from controlplane.services.scheduling.pools import Scheduling
from controlplane.services.scheduling.registry import AgentHandle
from controlplane.services.users import require_admin

__all__ = ["PlacedContainer", "containers_by_agent", "get_agent", "set_enabled"]


async def containers_by_agent(session: AsyncSession) -> dict[str, list[PlacedContainer]]:
    """Live containers per agent, from the allocations' placements."""
    out: dict[str, list[PlacedContainer]] = {}
    for c in await live_containers(session):
        out.setdefault(c.agent_id, []).append(c)
    return out


def get_agent(scheduling: Scheduling, agent_id: str) -> AgentHandle:
    handle = scheduling.registry.get(agent_id)
    if handle is None:
        raise NotFound(f"agent {agent_id} not found")
    return handle


async def set_enabled(
    session: AsyncSession,
    scheduling: Scheduling,
    user: User,
    agent_id: str,
    *,
    enabled: bool,
    drain: bool = False,
    now: datetime,
) -> AgentHandle:
    """Enable, or disable (with drain: running work finishes, nothing new is placed; without:
    the agent's allocations are killed)."""
    require_admin(user)
    handle = get_agent(scheduling, agent_id)
    handle.enabled = enabled
    handle.draining = (not enabled) and drain
    if not enabled and not drain:
        ids = {c.allocation_id for c in await live_containers(session, agent_id=agent_id)}
        for alloc in await session.scalars(
            select(Allocation).where(Allocation.allocation_id.in_(sorted(ids)))
        ):
            await allocations.request_kill(session, alloc, f"agent {agent_id} disabled", now)
    scheduling.poke(handle.resource_pool)
    return handle
