"""Agents as users see them: listing with their slots and containers, enable/disable/drain."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, User
from controlplane.domain.errors import NotFound
from controlplane.services.scheduling.apply import container_id
from controlplane.services.scheduling.pools import Scheduling
from controlplane.services.scheduling.registry import AgentHandle
from controlplane.services.users import require_admin


@dataclass(frozen=True)
class PlacedContainer:
    container_id: str
    allocation_id: str
    state: str
    device_ids: tuple[int, ...]


async def containers_by_agent(session: AsyncSession) -> dict[str, list[PlacedContainer]]:
    """Live containers per agent, from the allocations' placements."""
    rows = await session.execute(
        select(Allocation.allocation_id, Allocation.state, Allocation.placement).where(
            Allocation.end_time.is_(None)
        )
    )
    out: dict[str, list[PlacedContainer]] = {}
    for allocation_id, state, placement in rows.all():
        for rank, agent_id in enumerate(sorted(placement or {})):
            out.setdefault(agent_id, []).append(
                PlacedContainer(
                    container_id=container_id(allocation_id, rank),
                    allocation_id=allocation_id,
                    state=state,
                    device_ids=tuple(placement[agent_id]),
                )
            )
    return out


def get_agent(scheduling: Scheduling, agent_id: str) -> AgentHandle:
    handle = scheduling.registry.get(agent_id)
    if handle is None:
        raise NotFound(f"agent {agent_id} not found")
    return handle


def set_enabled(
    scheduling: Scheduling, user: User, agent_id: str, *, enabled: bool, drain: bool = False
) -> AgentHandle:
    """Enable, or disable (with drain: running work finishes, nothing new is placed)."""
    require_admin(user)
    handle = get_agent(scheduling, agent_id)
    handle.enabled = enabled
    handle.draining = (not enabled) and drain
    scheduling.poke(handle.resource_pool)
    return handle
