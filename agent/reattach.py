"""Reconciling this agent's containers with the master's list at each handshake (pure).

At every connection (fresh start or reconnect) the master lists the containers it expects this
agent to still have (`containers_to_reattach`). The agent looks at what it really has (its
runtime's labelled containers plus launches in flight) and decides, for each container:

| listed | the agent has it   | ack in AgentStarted                          | afterwards      |
|--------|--------------------|----------------------------------------------|-----------------|
| yes    | running / starting | its current state, no failure                | watched again   |
| yes    | exited with code N | TERMINATED, failure CONTAINER_FAILED if N!=0 | exit reported   |
| yes    | no                 | TERMINATED, failure UNKNOWN_CONTAINER        | -               |
| no     | yes (any state)    | none                                         | killed, removed |

A container that exited before this agent process started (it is known only through its
runtime's labels: the agent before this one died, maybe killing it too) carries
``agent_restarted`` in its CONTAINER_FAILED failure, so that the master can tell a task that died
with its agent from one whose own code failed.

"Exit reported" means: after AgentStarted the agent sends the same ContainerStateChanged
TERMINATED (with exit_code and failure) that it sends for any exit, exactly once per container.
The ack tells the master not to kill it; the report ends it through the normal exit path (exit 0
completes a trial). Reports queued while disconnected are kept only for listed containers and only
when newer than the acked state (TERMINATED always, as it carries the exit code).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agent.protocol import (
    Container,
    ContainerFailure,
    ContainerLog,
    ContainerOutput,
    ContainerReattached,
    ContainerState,
    ContainerStateChanged,
    FailureType,
    Message,
)

STATE_ORDER = {state: rank for rank, state in enumerate(ContainerState)}


@dataclass(frozen=True)
class Observed:
    """What the agent knows of one of its containers right now."""

    state: ContainerState
    exit_code: int | None = None
    # Why it ended, when that is more than its exit code (a launch that failed).
    failure: ContainerFailure | None = None


@dataclass(frozen=True)
class ReattachPlan:
    acks: tuple[ContainerReattached, ...]
    # Listed by the master and exited: their TERMINATED report follows AgentStarted.
    exited: tuple[str, ...]
    # Running or exited here but not listed: the master no longer wants them.
    strays: tuple[str, ...]


def exit_failure(
    exit_code: int | None, *, agent_restarted: bool = False
) -> ContainerFailure | None:
    """A non-zero exit is a container failure carrying its code; 0 is a clean end.

    ``agent_restarted``: this agent process found the container already dead when it started
    (no record of it here): it died while no agent watched it, maybe together with the agent
    before this one. The master decides what that means for the restart count."""
    if exit_code == 0:
        return None
    if exit_code is None:
        return ContainerFailure(
            type=FailureType.CONTAINER_FAILED,
            message="container exited; its exit code is lost",
            agent_restarted=agent_restarted,
        )
    message = f"container exited with code {exit_code}"
    if agent_restarted:
        message += " while no agent watched it (found by the agent's restart)"
    return ContainerFailure(
        type=FailureType.CONTAINER_FAILED,
        message=message,
        exit_code=exit_code,
        agent_restarted=agent_restarted,
    )


def plan_reattach(listed: Sequence[Container], observed: Mapping[str, Observed]) -> ReattachPlan:
    acks: list[ContainerReattached] = []
    exited: list[str] = []
    listed_ids = {c.id for c in listed}
    for container in listed:
        seen = observed.get(container.id)
        if seen is None:
            failure = ContainerFailure(
                type=FailureType.UNKNOWN_CONTAINER,
                message=f"container {container.id} is not on this agent",
            )
            state = ContainerState.TERMINATED
        elif seen.state is ContainerState.TERMINATED:
            failure = seen.failure or exit_failure(seen.exit_code)
            state = ContainerState.TERMINATED
            exited.append(container.id)
        else:
            failure = None
            state = seen.state
        acks.append(
            ContainerReattached(
                container=Container(id=container.id, state=state, devices=container.devices),
                failure=failure,
            )
        )
    strays = sorted(cid for cid in observed if cid not in listed_ids)
    return ReattachPlan(acks=tuple(acks), exited=tuple(exited), strays=tuple(strays))


def acked_states(acks: Iterable[ContainerReattached]) -> dict[str, ContainerState]:
    """The containers the agent still answers for, with the state it told the master."""
    return {
        a.container.id: a.container.state
        for a in acks
        if a.failure is None or a.failure.type is not FailureType.UNKNOWN_CONTAINER
    }


def keep_queued(message: Message, acked: Mapping[str, ContainerState]) -> bool:
    """Whether a report queued while disconnected still goes out after AgentStarted."""
    if isinstance(message, ContainerStateChanged):
        acked_state = acked.get(message.container.id)
        if acked_state is None:
            return False
        if message.container.state is ContainerState.TERMINATED:
            return True
        return STATE_ORDER[message.container.state] > STATE_ORDER[acked_state]
    if isinstance(message, ContainerLog | ContainerOutput):
        return message.container_id in acked
    return False
