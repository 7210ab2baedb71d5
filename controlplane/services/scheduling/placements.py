"""Which containers the database says run where: live allocations, one container per agent.

A container's id is ``f"{allocation_id}-{rank}"`` with rank the agent's index in the sorted
placement; the agent list views, reattachment and the loss of an agent all read it from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation
from controlplane.domain.container_ids import container_id


@dataclass(frozen=True)
class PlacedContainer:
    container_id: str
    allocation_id: str
    agent_id: str
    rank: int
    state: str
    device_ids: tuple[int, ...]
    resource_pool: str = ""


def containers_of(
    allocation_id: str,
    placement: Mapping[str, Sequence[int]] | None,
    *,
    state: str = "",
    resource_pool: str = "",
) -> list[PlacedContainer]:
    return [
        PlacedContainer(
            container_id=container_id(allocation_id, rank),
            allocation_id=allocation_id,
            agent_id=agent_id,
            rank=rank,
            state=state,
            device_ids=tuple(placement[agent_id]),
            resource_pool=resource_pool,
        )
        for rank, agent_id in enumerate(sorted(placement or {}))
    ]


async def live_containers(
    session: AsyncSession, *, agent_id: str | None = None, pool: str | None = None
) -> list[PlacedContainer]:
    """Containers of every live allocation (on one agent, or in one pool, when given).

    Placements are JSON, so the agent filter runs here rather than in SQL; live allocations
    are few compared with the history.
    """
    query = select(
        Allocation.allocation_id, Allocation.state, Allocation.placement, Allocation.resource_pool
    ).where(Allocation.end_time.is_(None))
    if pool is not None:
        query = query.where(Allocation.resource_pool == pool)
    out: list[PlacedContainer] = []
    for allocation_id, state, placement, resource_pool in (await session.execute(query)).all():
        if agent_id is not None and agent_id not in (placement or {}):
            continue
        for c in containers_of(allocation_id, placement, state=state, resource_pool=resource_pool):
            if agent_id is None or c.agent_id == agent_id:
                out.append(c)
    return out
