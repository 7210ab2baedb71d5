"""What the provisioner reads off the last scheduling pass: unmet demand and idle agents."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from resource_pools.scaling import desired_new_instances

if TYPE_CHECKING:
    from controlplane.services.scheduling.pools import PassResult
    from controlplane.services.scheduling.registry import AgentHandle


def unmet_requests(result: PassResult | None) -> dict[str, int]:
    """Requests the pass left waiting (id → slots): what new instances would be for."""
    if result is None:
        return {}
    started = {s.allocation_id for s in result.plan.start}
    return {
        r.allocation_id: r.slots for r in result.snapshot.pending if r.allocation_id not in started
    }


def desired_instances(result: PassResult | None, *, slots_per_instance: int, max_aux: int) -> int:
    """Reference §2.2 over the requests the last pass could not place."""
    if result is None:
        return 0
    waiting = unmet_requests(result)
    pending = [r for r in result.snapshot.pending if r.allocation_id in waiting]
    return desired_new_instances(
        pending,
        result.snapshot.groups,
        slots_per_instance=slots_per_instance,
        max_aux_per_agent=max_aux,
    )


def connected_agents(handles: Iterable[AgentHandle], result: PassResult | None) -> dict[str, bool]:
    """Connected agent id → idle. An agent the last pass has not seen yet is idle."""
    seen: dict[str, bool] = {}
    if result is not None:
        seen = {a.id: a.is_idle for a in result.snapshot.agents}
        for start in result.plan.start:  # placed by that very pass: busy from now on
            for placement in start.placements:
                seen[placement.agent_id] = False
    return {h.id: seen.get(h.id, True) for h in handles if h.connected}
