"""Carry a scheduling plan out: allocation rows, preemption signals, container start messages.

Everything here runs in the pass's transaction; messages to agents are returned, not sent, so
the caller sends them only after the commit (an agent must never start a container for an
allocation the database does not hold).

Each container's TaskSpec is the task's `LaunchSpec` (image, argv, environment, mounts) plus
the variables that differ per container and allocation (ids and the allocation token), and
the Unix user the task runs as (its owner's linked agent user, or the default for unlinked
users: controlplane/domain/task_user.py). The
agent adds its own (DET_MASTER*, DET_AGENT_ID, DET_SLOT_IDS, and DET_CLUSTER_ID /
DET_MASTER_ID from the MasterInfo it was given, as Determined's agent does). Each container
also gets the ``info/*.json`` files Determined's prep_container would write (`info_files`): the
real determined package reads those, not the environment.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import Container, ContainerState, Device, StartContainer, TaskSpec, TaskUser
from controlplane.domain import task_info
from controlplane.domain.container_ids import container_id
from controlplane.domain.task_user import DefaultTaskUser
from controlplane.services import allocations, task_users
from controlplane.services.launch_spec import LaunchSpec
from controlplane.services.scheduling.registry import AgentRegistry
from controlplane.services.scheduling.snapshot import PendingRow, PoolInputs, still_pending
from controlplane.services.scheduling.task_spec import launch_spec
from resource_pools.types import SchedulingPlan, StartAllocation

log = logging.getLogger(__name__)


@runtime_checkable
class DeviceSpecific(Protocol):
    """A launch spec whose image and variables depend on the slots' device type."""

    def for_device(self, device_type: str) -> LaunchSpec:
        """The spec for containers on ``device_type`` slots ("cpu", "cuda" or "rocm")."""
        ...


def device_type_of(devices: Sequence[Device]) -> str:
    """cuda or rocm when the container has such a slot; cpu for cpu slots and aux work."""
    kinds = {d.type.value for d in devices}
    for kind in ("cuda", "rocm"):
        if kind in kinds:
            return kind
    return "cpu"


@dataclass
class Applied:
    started: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    # Tasks that left the queue with this plan: started, or found gone (paused, killed).
    dequeued: list[str] = field(default_factory=list)
    outgoing: list[tuple[str, StartContainer]] = field(default_factory=list)


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
        free = handle.free_devices(taken)
        if len(free) < placement.slots:
            return None
        chosen[placement.agent_id] = sorted(free[: placement.slots])
    return chosen


def _address(registry: AgentRegistry, agent_id: str) -> str:
    """The agent's address as it reported it; loopback when it reported none (a lone container
    only ever talks to itself through its rendezvous address)."""
    handle = registry.get(agent_id)
    peer = getattr(handle, "peer_host", "") if handle is not None else ""
    addresses = handle.addresses if handle is not None else ()
    return str(peer or next(iter(addresses), "") or "127.0.0.1")


def info_files(
    environment: dict[str, str],
    *,
    agent_id: str,
    devices: Sequence[Device],
    num_containers: int,
    address: str,
) -> dict[str, str]:
    """One container's ``info/*.json``: cluster.json and resources.json always; rendezvous.json
    for a trial that runs in one container (its layout is known now). A trial spread over several
    containers leaves rendezvous.json to its launcher: the master's rendezvous endpoint is what
    makes those containers wait for each other."""
    cluster = task_info.cluster_info_from_env(
        environment, agent_id=agent_id, slot_ids=[d.id for d in devices]
    )
    gpus = [d.uuid for d in devices if d.type.value in ("cuda", "rocm") and d.uuid]
    files = {
        task_info.CLUSTER_FILE: task_info.encode(cluster),
        task_info.RESOURCES_FILE: task_info.encode(task_info.resources_info(gpus)),
    }
    if environment.get("DET_TASK_TYPE") == "TRIAL" and num_containers == 1:
        rendezvous = task_info.rendezvous_info([address], 0, [len(devices)])
        files[task_info.RENDEZVOUS_FILE] = task_info.encode(rendezvous)
    return files


def start_messages(
    allocation_id: str,
    row: PendingRow,
    token: str,
    chosen: dict[str, list[int]],
    registry: AgentRegistry,
    launch: LaunchSpec,
    user: TaskUser | None = None,
) -> list[tuple[str, StartContainer]]:
    out: list[tuple[str, StartContainer]] = []
    for rank, (agent_id, device_ids) in enumerate(sorted(chosen.items())):
        handle = registry.get(agent_id)
        assert handle is not None
        devices = tuple(d for d in handle.devices if d.id in set(device_ids))
        cid = container_id(allocation_id, rank)
        base = launch
        if isinstance(launch, DeviceSpecific):
            base = launch.for_device(device_type_of(devices))
        environment = {
            **base.environment,
            "DET_TASK_ID": row.task_id,
            "DET_ALLOCATION_ID": allocation_id,
            "DET_RESOURCES_ID": cid,
            "DET_CONTAINER_ID": cid,
            "DET_SESSION_TOKEN": token,
            "DET_TASK_TYPE": row.task_type,
        }
        files = info_files(
            environment,
            agent_id=agent_id,
            devices=devices,
            num_containers=len(chosen),
            address=_address(registry, agent_id),
        )
        spec = TaskSpec(
            allocation_id=allocation_id,
            task_id=row.task_id,
            task_type=row.task_type,
            rank=rank,
            num_agents=len(chosen),
            slots=len(device_ids),
            image=base.image,
            force_pull=base.force_pull,
            argv=base.argv,
            environment=environment,
            mounts=base.mounts,
            shm_size_bytes=base.shm_size_bytes,
            files={**base.files, **files},
            python=base.python,
            user=user,
        )
        container = Container(id=cid, state=ContainerState.ASSIGNED, devices=devices)
        out.append((agent_id, StartContainer(container=container, spec=spec)))
    return out


async def _launch_spec(session: AsyncSession, row: PendingRow) -> LaunchSpec | None:
    """The task's launch spec; None (the task stays queued) when it cannot be built.

    Built before the allocation is opened, so a task that cannot launch leaves no allocation
    behind. A broken task must not stop the pool's other work, so its error is logged and the
    pass goes on; database errors still end the pass (its transaction is no longer usable).
    """
    try:
        return await launch_spec(session, row.task_id, row.task_type)
    except SQLAlchemyError:
        raise
    except Exception:
        log.exception("cannot build the launch spec of task %s; it stays queued", row.task_id)
        return None


async def _task_user(
    session: AsyncSession, row: PendingRow, default: DefaultTaskUser
) -> TaskUser | None:
    """The Unix user the task's containers run as (controlplane/domain/task_user.py); None
    (the task stays queued, as with a launch spec that cannot be built) when there is none."""
    try:
        return await task_users.task_user_of(session, row.task_id, default)
    except SQLAlchemyError:
        raise
    except Exception:
        log.exception("cannot tell the Unix user of task %s; it stays queued", row.task_id)
        return None


async def apply_plan(
    session: AsyncSession,
    inputs: PoolInputs,
    plan: SchedulingPlan,
    registry: AgentRegistry,
    *,
    pool: str,
    now: datetime,
    default_task_user: DefaultTaskUser = DefaultTaskUser(),
) -> Applied:
    applied = Applied()
    pending = {row.task_id: row for row in inputs.rows.pending}
    used = {agent: set(devices) for agent, devices in inputs.used_devices.items()}
    wanted = [s.allocation_id for s in plan.start]
    current = await still_pending(session, pool, wanted) if wanted else {}
    for start in plan.start:
        row = pending[start.allocation_id]
        if row.task_id not in current:  # paused, killed or placed since the snapshot
            applied.skipped.append(row.task_id)
            applied.dequeued.append(row.task_id)
            continue
        chosen = choose_devices(start, registry, used)
        if chosen is None:
            applied.skipped.append(row.task_id)
            continue
        launch = await _launch_spec(session, row)
        user = await _task_user(session, row, default_task_user) if launch else None
        if launch is None or user is None:
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
            previous=current[row.task_id],
        )
        applied.started.append(opened.allocation_id)
        applied.dequeued.append(row.task_id)
        applied.outgoing.extend(
            start_messages(opened.allocation_id, row, opened.token, chosen, registry, launch, user)
        )
    for preempt in plan.preempt:
        if await allocations.request_preemption(
            session, preempt.allocation_id, reason=preempt.reason, now=now
        ):
            applied.preempted.append(preempt.allocation_id)
    return applied
