"""Demand for new instances, computed from the pending requests only (reference §2.2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from resource_pools.types import AgentState, JobSettings, Request


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def is_countable(request: Request, slots_per_instance: int) -> bool:
    """True when a slotted request could ever run on instances of this size.

    It must fit one instance or be a whole multiple of its size; zero-slot requests and a
    size of 0 never count.
    """
    if request.is_zero_slot or slots_per_instance <= 0:
        return False
    return request.slots <= slots_per_instance or request.slots % slots_per_instance == 0


def desired_new_instances(
    pending: Sequence[Request],
    groups: Mapping[str, JobSettings],
    *,
    slots_per_instance: int,
    max_aux_per_agent: int,
) -> int:
    """How many new instances the pending requests call for, ignoring existing agents.

    Running work and idle agents are deliberately not subtracted: whatever fits on existing
    agents the scheduler has already placed. Slotted requests that can never run on this
    instance size are ignored; each job's counted slots are capped at its ``max_slots``.
    Zero-slot requests need ``ceil(count / max_aux_per_agent)`` instances. The answer is the
    larger of the two needs.
    """
    if slots_per_instance < 0 or max_aux_per_agent < 0:
        raise ValueError("slots_per_instance and max_aux_per_agent must be >= 0")
    zero_slot = sum(1 for r in pending if r.is_zero_slot)
    for_aux = _ceil_div(zero_slot, max_aux_per_agent) if max_aux_per_agent > 0 else 0
    if slots_per_instance == 0:
        return for_aux
    per_job: dict[str, int] = {}
    for request in pending:
        if is_countable(request, slots_per_instance):
            per_job[request.job_id] = per_job.get(request.job_id, 0) + request.slots
    slot_sum = sum(_capped(slots, groups.get(job_id)) for job_id, slots in per_job.items())
    return max(for_aux, _ceil_div(slot_sum, slots_per_instance))


def _capped(slots: int, settings: JobSettings | None) -> int:
    if settings is None or settings.max_slots is None:
        return slots
    return min(slots, settings.max_slots)


def agent_idle_flags(agents: Iterable[AgentState]) -> dict[str, bool]:
    """Agent id to idle flag, as pushed to the provisioner with the desired instance count."""
    return {agent.id: agent.is_idle for agent in agents}
