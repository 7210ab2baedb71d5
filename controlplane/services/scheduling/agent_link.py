"""The database side of an agent's connection: what it should still run, what to make of its
reattach acks, and failing its work when it is lost or comes back changed.

Each function runs in the caller's transaction and returns the signals to send after commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import Container, ContainerReattached, ContainerState, Device, FailureType
from controlplane.db.models import Allocation
from controlplane.domain.states import AllocationState
from controlplane.domain.trial_exit import AgentFate, AllocationExit
from controlplane.services import history
from controlplane.services.scheduling.agent_events import Effects, end_allocation, was_killed
from controlplane.services.scheduling.placements import PlacedContainer, live_containers
from controlplane.services.scheduling.reattach import plan_reattach


async def expected_containers(session: AsyncSession, agent_id: str) -> list[PlacedContainer]:
    """The containers the database says run on this agent."""
    return await live_containers(session, agent_id=agent_id)


def reattach_list(
    expected: Sequence[PlacedContainer], known_devices: Sequence[Device] = ()
) -> tuple[Container, ...]:
    """`containers_to_reattach`: each container with its devices (full descriptions when the
    master still knows the agent's devices, else their ids) and its allocation's state."""
    by_id = {d.id: d for d in known_devices}
    return tuple(
        Container(
            id=c.container_id,
            state=ContainerState(c.state),
            devices=tuple(by_id.get(i, Device(id=i)) for i in c.device_ids),
        )
        for c in expected
    )


async def apply_reattach(
    session: AsyncSession, agent_id: str, acks: Sequence[ContainerReattached], now: datetime
) -> Effects:
    effects = Effects()
    plan = plan_reattach(await expected_containers(session, agent_id), acks)
    for kept in plan.kept:
        alloc = await session.get(Allocation, kept.container.allocation_id)
        if alloc is not None and AllocationState(alloc.state) is not kept.state:
            history.move_allocation(session, alloc, kept.state, now, "reattached")
    for ended in plan.ended:
        alloc = await session.get(Allocation, ended.container.allocation_id)
        if alloc is None or alloc.end_time is not None:
            continue
        exit_ = AllocationExit(
            exit_code=ended.exit_code,
            failure=ended.failure,
            preempt_requested=alloc.preempt_requested,
            preempt_acked=alloc.preempt_acked,
            killed=await was_killed(session, alloc),
            agent=ended.agent,
        )
        spare = None if ended.kill else ended.container.container_id
        effects.signals += await end_allocation(
            session, alloc, exit_, now, detail=ended.detail, spare=spare
        )
    for stray in plan.strays:
        effects.kill(agent_id, stray)
    return effects


async def fail_agent_work(
    session: AsyncSession, agent_id: str, detail: str, now: datetime
) -> Effects:
    """End every live allocation with a container on the agent: AGENT_FAILED, so a trial is
    re-queued elsewhere without using up a restart; its other containers get SIGKILL."""
    effects = Effects()
    done: set[str] = set()
    for c in await expected_containers(session, agent_id):
        if c.allocation_id in done:
            continue
        done.add(c.allocation_id)
        alloc = await session.get(Allocation, c.allocation_id)
        if alloc is None or alloc.end_time is not None:
            continue
        ended = AllocationExit(
            exit_code=None,
            failure=FailureType.AGENT_FAILED.value,
            preempt_requested=alloc.preempt_requested,
            preempt_acked=alloc.preempt_acked,
            agent=AgentFate.LOST,
        )
        effects.signals += await end_allocation(session, alloc, ended, now, detail=detail)
    return effects
