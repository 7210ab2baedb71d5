"""The proxy's other services: the ports a task declares in `environment.proxy_ports`
(Determined's key), reached at `/proxy/{task id}:{port}/` (or `/proxy/{task id}/` for the one
declared with `default_service_id`), on experiments' trials, commands and generic tasks alike.

Unlike a notebook's service, such a port is not reported by the task: the user's code just
listens on it, so the master derives the address itself, the chief container's agent (rank 0,
as the rendezvous numbers them) on the declared port, and the proxy's connect-time check
(`proxy_lookup._connect_address`) holds it to that agent and that port as it does any target.
No gate and no secret: the service is the user's own server, as in Determined.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.proxy_address import forbidden_host
from controlplane.db.models import Allocation, Command, Experiment, Task, Trial
from controlplane.domain.errors import NotFound, Unavailable
from controlplane.domain.proxy_ports import ProxyPort, find_port, proxy_ports


@dataclass(frozen=True)
class PortService:
    """A declared port of a live (or ended) task, and what the proxy needs to reach it."""

    task_id: str
    task_type: str
    owner_id: int
    declared: ProxyPort
    ended: bool
    # The chief's agent and its devices ({} while the task is queued), and the config.
    chief: dict[str, Any]
    config: Mapping[str, Any]


def chief_placement(placement: Mapping[str, Any] | None) -> dict[str, Any]:
    """The agent of the allocation's rank-0 container (rendezvous ranks sort the placement by
    agent id) and its devices; {} while unplaced. Determined registers an allocation's proxies
    for its chief only."""
    if not placement:
        return {}
    agent = min(placement)
    return {agent: placement[agent]}


async def find(session: AsyncSession, task_id: str, port: int | None) -> PortService | None:
    """The declared port `port` (None: the `default_service_id` one) of task `task_id`; None
    when the task or the port does not exist (the caller answers 404 before or after checking
    who asks, whichever tells a stranger less)."""
    row = (
        await session.execute(
            select(
                Task.task_type,
                Task.owner_id,
                Task.end_time,
                # a trial's task keeps no end time of its own: the trial's says it is over
                Trial.end_time,
                Allocation.placement,
                Command.config,
                Experiment.config,
            )
            .outerjoin(
                Allocation, (Allocation.task_id == Task.task_id) & Allocation.end_time.is_(None)
            )
            .outerjoin(Command, Command.task_id == Task.task_id)
            .outerjoin(Trial, Trial.task_id == Task.task_id)
            .outerjoin(Experiment, Experiment.id == Trial.experiment_id)
            .where(Task.task_id == task_id)
        )
    ).first()
    if row is None:
        return None
    task_type, owner_id, end_time, trial_end, placement, command_config, experiment_config = row
    config = command_config or experiment_config or {}
    declared = find_port(proxy_ports(config), port)
    if declared is None:
        return None
    return PortService(
        task_id, task_type, owner_id, declared,
        end_time is not None or trial_end is not None,
        chief_placement(placement), config,
    )  # fmt: skip


def not_found(service_id: str, port: int | None) -> NotFound:
    if port is None:  # a bare task id names an interactive task's own service
        return NotFound(
            f"interactive task {service_id} not found (a port a task declares in "
            f"environment.proxy_ports is reached at /proxy/{service_id}:PORT/)"
        )
    return NotFound(
        f"proxy service {service_id} not found: no such task, or the task declares no such port "
        "in environment.proxy_ports"
    )


def ready(service: PortService, agent_hosts: tuple[str, ...]) -> str:
    """The address the proxy connects to (`host:port`): the chief agent's first address on the
    declared port. 404 once the task ended, 503 while it waits for an agent."""
    if service.ended:
        raise NotFound(f"task {service.task_id} has ended")
    hosts = [h for h in agent_hosts if forbidden_host(h) is None]
    if not service.chief or not hosts:
        raise Unavailable(
            f"task {service.task_id} is not running yet: its port {service.declared.port} "
            "is reachable once the task has started"
        )
    return f"{hosts[0]}:{service.declared.port}"
