"""Reconciling an agent's containers with the database when it (re)connects (pure).

The master lists, in `MasterSetAgentOptions.containers_to_reattach`, every container the
database says runs on the agent; the agent answers in `AgentStarted.containers_reattached`.

- not terminated, no failure: kept (its state moves forward if the ack is ahead);
- TERMINATED, no failure: ended as an exit with code 0;
- TERMINATED with CONTAINER_FAILED and an exit code: ended as an exit with that code (the
  user's code failed), unless the agent found it dead when it (re)started (``agent_restarted``):
  then a SIGKILL or SIGTERM is the agent's loss, not the user's (domain/trial_exit.py);
- any other failure, or no ack at all: ended with RESTORE_ERROR ("failed to reattach container
  on reconnect"), not counted against max_restarts, and SIGKILLed;
- an ack for a container the master did not list: SIGKILL.

A container that exited while the master was away is an exit like any other (a finished trial
completes; a crash counts): the agent acks it TERMINATED, with its exit code in the failure when
it is not 0 (agent/reattach.py). Everything the agent cannot account for is the platform's
failure, so the trial is re-queued for free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.protocol import ContainerReattached, ContainerState, Device, FailureType
from controlplane.domain.states import ALLOCATION_ORDER, AllocationState
from controlplane.domain.trial_exit import AgentFate
from controlplane.services.scheduling.placements import PlacedContainer

NOT_REATTACHED = "failed to reattach container on reconnect"


@dataclass(frozen=True)
class Kept:
    container: PlacedContainer
    state: AllocationState


@dataclass(frozen=True)
class Ended:
    container: PlacedContainer
    exit_code: int | None
    failure: str | None
    detail: str
    # Still (maybe) there on the agent: it gets a SIGKILL. An exited container does not.
    kill: bool
    # RESTARTED: it died before the agent's current process started (found dead by it).
    agent: AgentFate = AgentFate.HEALTHY


@dataclass(frozen=True)
class ReattachPlan:
    kept: tuple[Kept, ...] = ()
    ended: tuple[Ended, ...] = ()
    strays: tuple[str, ...] = ()


def _ended_by(ack: ContainerReattached | None, container: PlacedContainer) -> Ended | None:
    if ack is None:
        return Ended(container, None, FailureType.RESTORE_ERROR.value, NOT_REATTACHED, kill=True)
    failure = ack.failure
    terminated = ack.container.state is ContainerState.TERMINATED
    if failure is None and not terminated:
        return None
    if failure is None:
        return Ended(container, 0, None, "exited while disconnected", kill=False)
    if failure.type is FailureType.CONTAINER_FAILED and failure.exit_code is not None:
        detail = failure.message or "exited while disconnected"
        agent = AgentFate.RESTARTED if failure.agent_restarted else AgentFate.HEALTHY
        return Ended(
            container, failure.exit_code, failure.type.value, detail, kill=False, agent=agent
        )
    detail = f"{NOT_REATTACHED}: {failure.type.value}"
    if failure.message:
        detail += f": {failure.message}"
    return Ended(container, None, FailureType.RESTORE_ERROR.value, detail, kill=True)


def plan_reattach(
    expected: Sequence[PlacedContainer], acks: Sequence[ContainerReattached]
) -> ReattachPlan:
    by_id = {ack.container.id: ack for ack in acks}
    kept: list[Kept] = []
    ended: list[Ended] = []
    for container in expected:
        ack = by_id.get(container.container_id)
        end = _ended_by(ack, container)
        if end is not None:
            ended.append(end)
            continue
        assert ack is not None
        acked = AllocationState(ack.container.state.value)
        current = AllocationState(container.state)
        ahead = ALLOCATION_ORDER[acked] > ALLOCATION_ORDER[current]
        kept.append(Kept(container, acked if ahead else current))
    listed = {c.container_id for c in expected}
    strays = tuple(
        sorted(
            ack.container.id
            for ack in acks
            if ack.container.id not in listed
            and ack.container.state is not ContainerState.TERMINATED
        )
    )
    return ReattachPlan(kept=tuple(kept), ended=tuple(ended), strays=strays)


def _device_key(devices: Sequence[Device]) -> list[tuple[int, str, str]]:
    return sorted((d.id, d.uuid, d.type.value) for d in devices)


def mismatch(
    *,
    agent_id: str,
    pool: str,
    devices: Sequence[Device],
    previous_pool: str | None,
    previous_devices: Sequence[Device] | None,
    expected: Sequence[PlacedContainer],
) -> str | None:
    """Why a returning agent cannot take its old place (None: it can).

    With a record of the agent (it reconnects within its wait), its pool and devices must be
    the same. Without one (the master restarted), its containers must fit: same pool, and the
    devices they were given still exist.
    """
    if previous_pool is not None and previous_pool != pool:
        return f"agent {agent_id} reconnected to pool {pool!r}; it was in {previous_pool!r}"
    if previous_devices is not None and _device_key(previous_devices) != _device_key(devices):
        return f"agent {agent_id} reconnected with different devices"
    ids = {d.id for d in devices}
    for c in expected:
        if c.resource_pool and c.resource_pool != pool:
            return (
                f"agent {agent_id} connected to pool {pool!r}, but its container "
                f"{c.container_id} runs in pool {c.resource_pool!r}"
            )
        missing = sorted(set(c.device_ids) - ids)
        if missing:
            return (
                f"agent {agent_id} connected without devices {missing} "
                f"that its container {c.container_id} uses"
            )
    return None
