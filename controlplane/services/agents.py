"""Agents as users see them: listing with their slots and containers, enable/disable/drain.

Disabling without drain is Determined's ForceKill: every allocation on the agent is killed
(recorded as the master's kill, so a trial is re-queued elsewhere without using a restart).
With drain, running work finishes and nothing new is placed. An agent whose cloud announced an
interruption is drained and its allocations are preempted at once (`drain_for_interruption`).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import InterruptionNotice
from controlplane.db.models import Allocation, User
from controlplane.domain.errors import NotFound
from controlplane.services import allocations
from controlplane.services.scheduling.placements import PlacedContainer, live_containers
from controlplane.services.scheduling.pools import Scheduling
from controlplane.services.scheduling.registry import AgentHandle
from controlplane.services.users import require_admin

__all__ = [
    "PlacedContainer",
    "containers_by_agent",
    "drain_for_interruption",
    "get_agent",
    "set_enabled",
]


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
    if enabled:  # an admin vouches for it again: its interruption notice no longer holds
        handle.interrupted_at = None
    if not enabled and not drain:
        ids = {c.allocation_id for c in await live_containers(session, agent_id=agent_id)}
        for alloc in await session.scalars(
            select(Allocation).where(Allocation.allocation_id.in_(sorted(ids)))
        ):
            await allocations.request_kill(session, alloc, f"agent {agent_id} disabled", now)
    scheduling.poke(handle.resource_pool)
    return handle


def set_slot_enabled(
    scheduling: Scheduling, user: User, agent_id: str, slot_id: str, *, enabled: bool
) -> AgentHandle:
    """Enable or disable one slot (`det slot enable|disable`): a disabled slot takes no new
    work; what runs on it finishes (as `det agent disable --drain`, for one slot)."""
    require_admin(user)
    handle = get_agent(scheduling, agent_id)
    device = next((d.id for d in handle.devices if str(d.id) == slot_id), None)
    if device is None:
        raise NotFound(f"slot {slot_id} not found on agent {agent_id}")
    if enabled:
        handle.disabled_devices.discard(device)
    else:
        handle.disabled_devices.add(device)
    scheduling.poke(handle.resource_pool)
    return handle


async def drain_for_interruption(
    session: AsyncSession,
    scheduling: Scheduling,
    agent_id: str,
    notice: InterruptionNotice,
    now: datetime,
) -> list[str]:
    """The cloud takes the agent's machine: drain it (as `disable --drain`) and preempt every
    allocation on it now, so trials checkpoint and are re-queued elsewhere before it goes.

    Returns the allocations newly asked to stop; repeating the notice changes nothing.
    """
    handle = get_agent(scheduling, agent_id)
    handle.enabled = False
    handle.draining = True
    handle.interrupted_at = handle.interrupted_at or now
    when = f" at {notice.deadline.isoformat()}" if notice.deadline else ""
    reason = (
        f"agent {agent_id}: {notice.cloud or 'cloud'} interruption notice ({notice.action}{when})"
    )
    ids = sorted({c.allocation_id for c in await live_containers(session, agent_id=agent_id)})
    stopping = [
        allocation_id
        for allocation_id in ids
        if await allocations.request_preemption(session, allocation_id, reason=reason, now=now)
    ]
    scheduling.poke(handle.resource_pool)
    return stopping
