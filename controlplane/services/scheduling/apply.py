"""Carry a scheduling plan out: allocation rows, preemption signals, container start messages.

Everything here runs in the pass's transaction; messages to agents are returned, not sent, so
the caller sends them only after the commit (an agent must never start a container for an
allocation the database does not hold).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import Container, ContainerState, StartContainer, TaskSpec
from controlplane.services import allocations
from controlplane.services.scheduling.registry import AgentRegistry
from controlplane.services.scheduling.snapshot import PendingRow, PoolInputs, still_pending
from resource_pools.types import SchedulingPlan, StartAllocation


@dataclass
class Applied:
    started: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    outgoing: list[tuple[str, StartContainer]] = field(default_factory=list)


def container_id(allocation_id: str, rank: int) -> str:
    return f"{allocation_id}-{rank}"


def choose_devices(
    start: StartAllocation, registry: AgentRegistry, used: dict[str, set[int]]
) -> dict[str, list[int]] | None:
    """Name the devices for each placement on the agents as they are now; None if one refuses.

    Determined re-checks every placement against a fresh copy of the agents and rolls the
    whole request back when any agent refuses; this is that check.
    """
    chosen: dict[str, list[int]] = {}
    for placement in start.placements:
        handle = registry.get(placement.agent_id)
        if handle is None or not handle.schedulable or placement.agent_id in chosen:
            return None
        taken = used.get(placement.agent_id, set())
        free = [d.id for d in handle.devices if d.id not in taken]
        if len(free) < placement.slots:
            return None
        chosen[placement.agent_id] = sorted(free[: placement.slots])
    return chosen


def start_messages(
    allocation_id: str,
    row: PendingRow,
    token: str,
    chosen: dict[str, list[int]],
    registry: AgentRegistry,
) -> list[tuple[str, StartContainer]]:
    out: list[tuple[str, StartContainer]] = []
    for rank, (agent_id, device_ids) in enumerate(sorted(chosen.items())):
        handle = registry.get(agent_id)
        assert handle is not None
        devices = tuple(d for d in handle.devices if d.id in set(device_ids))
        cid = container_id(allocation_id, rank)
        spec = TaskSpec(
            allocation_id=allocation_id,
            task_id=row.task_id,
            task_type=row.task_type,
            rank=rank,
            num_agents=len(chosen),
            slots=len(device_ids),
            environment={
                "DET_TASK_ID": row.task_id,
                "DET_ALLOCATION_ID": allocation_id,
                "DET_RESOURCES_ID": cid,
                "DET_CONTAINER_ID": cid,
                "DET_SESSION_TOKEN": token,
                "DET_TASK_TYPE": row.task_type,
            },
        )
        container = Container(id=cid, state=ContainerState.ASSIGNED, devices=devices)
        out.append((agent_id, StartContainer(container=container, spec=spec)))
    return out


async def apply_plan(
    session: AsyncSession,
    inputs: PoolInputs,
    plan: SchedulingPlan,
    registry: AgentRegistry,
    *,
    pool: str,
    now: datetime,
) -> Applied:
    applied = Applied()
    pending = {row.task_id: row for row in inputs.rows.pending}
    used = {agent: set(devices) for agent, devices in inputs.used_devices.items()}
    wanted = [s.allocation_id for s in plan.start]
    current = await still_pending(session, pool, wanted) if wanted else set()
    for start in plan.start:
        row = pending[start.allocation_id]
        if row.task_id not in current:  # paused, killed or placed since the snapshot
            applied.skipped.append(row.task_id)
            continue
        chosen = choose_devices(start, registry, used)
        if chosen is None:
            applied.skipped.append(row.task_id)
            continue
        for agent_id, device_ids in chosen.items():
            used.setdefault(agent_id, set()).update(device_ids)
        opened = await allocations.open_allocation(
            session,
            row.task_id,
            slots=row.slots,
            resource_pool=pool,
            now=now,
            placement=chosen,
        )
        applied.started.append(opened.allocation_id)
        applied.outgoing.extend(
            start_messages(opened.allocation_id, row, opened.token, chosen, registry)
        )
    for preempt in plan.preempt:
        if await allocations.request_preemption(
            session, preempt.allocation_id, reason=preempt.reason, now=now
        ):
            applied.preempted.append(preempt.allocation_id)
    return applied
