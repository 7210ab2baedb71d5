"""Fitting: which agents a request may use, which it prefers, and the placements chosen.

Pure functions over ``AgentState`` tuples. Simulations reserve and release on copies, never on
the snapshot. Mirrors Determined's findFits (reference §1.2).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import lru_cache

from resource_pools.types import AgentState, FittingPolicy, Placement, Request, Waiting, WaitReason

_UINT64 = 1 << 64


class OverCommitError(ValueError):
    """A reservation or release does not match what the agents can hold."""


def can_share(request: Request, agent: AgentState) -> bool:
    """Hard constraints for placing the whole request on this one agent (shared fit)."""
    if agent.id in request.blocked_agents or request.slots > agent.empty_slots:
        return False
    return not request.is_zero_slot or agent.empty_zero_slots > 0


def can_dedicate(request: Request, agent: AgentState) -> bool:
    """Hard constraints for giving this whole agent to one part of a multi-agent request.

    Zero-slot containers already on the agent are allowed; used slots are not.
    """
    return (
        agent.id not in request.blocked_agents and agent.used_slots == 0 and agent.empty_slots > 0
    )


def score(request: Request, agent: AgentState, policy: FittingPolicy) -> float:
    """Soft score of placing ``request`` on ``agent``; higher is preferred.

    Best fit packs (fewer free places scores higher); worst fit spreads (a larger free fraction
    scores higher). Zero-slot work on an agent without used slots is scored on aux places.
    Ignores hard constraints. An agent with no capacity at all scores 0.
    """
    if request.is_zero_slot and agent.used_slots == 0:
        capacity, free = agent.zero_slot_capacity, agent.empty_zero_slots
        if capacity == 0:
            return 0.0
    else:
        capacity, free = agent.total_slots, agent.empty_slots
    return fraction_score(policy, capacity, free)


def fraction_score(policy: FittingPolicy, capacity: int, free: int) -> float:
    """The score of ``free`` places out of ``capacity``; the one formula ``score`` uses."""
    if policy is FittingPolicy.BEST:
        return 1.0 / (1.0 + free)
    return free / capacity if capacity else 0.0


def allocation_hash(value: str) -> int:
    """First 8 bytes of md5(value) as a little-endian unsigned integer."""
    return int.from_bytes(hashlib.md5(value.encode()).digest()[:8], "little")


# Agent ids recur in every pass, allocation ids mostly do not: only the former are cached.
agent_hash = lru_cache(maxsize=16_384)(allocation_hash)


def hash_distance(allocation_id: str, agent_id: str) -> int:
    """md5-derived uint64 of the allocation minus that of the agent, wrapping at 2**64.

    The value is only a deterministic tie-break that spreads equal-score work over agents.
    """
    return (allocation_hash(allocation_id) - agent_hash(agent_id)) % _UINT64


def sort_candidates(
    request: Request, agents: Iterable[AgentState], policy: FittingPolicy
) -> tuple[AgentState, ...]:
    """Agents best first: score descending, then hash distance ascending, then agent id.

    Does not filter; the order is total, so it does not depend on the input order.
    """
    return tuple(
        sorted(
            agents,
            key=lambda a: (
                -score(request, a, policy),
                hash_distance(request.allocation_id, a.id),
                a.id,
            ),
        )
    )


def find_fit(
    request: Request,
    agents: Iterable[AgentState],
    policy: FittingPolicy = FittingPolicy.BEST,
    *,
    allow_heterogeneous: bool = False,
) -> tuple[Placement, ...] | None:
    """Placements for the whole request, or None when it cannot be placed now.

    1. The best single agent that can hold all of it (shared fit).
    2. Give up for requests of at most one slot or marked ``single_node``.
    3. Whole unused agents of one size, largest size first, that together hold exactly the
       request (dedicated fit); then, if ``allow_heterogeneous``, a greedy largest-first fill
       of whole unused agents of mixed sizes that must come out exact.
    Deterministic and independent of the order of ``agents``.
    """
    agents = tuple(agents)
    shared = [a for a in agents if can_share(request, a)]
    if shared:
        best = sort_candidates(request, shared, policy)[0]
        return (Placement(best.id, request.slots),)
    if request.slots <= 1 or request.single_node:
        return None
    by_size = _dedicated_by_size(request, agents, policy)
    fit = _homogeneous_fit(request.slots, by_size)
    if fit is None and allow_heterogeneous:
        fit = _heterogeneous_fit(request.slots, by_size)
    return fit


def _dedicated_by_size(
    request: Request, agents: Iterable[AgentState], policy: FittingPolicy
) -> list[tuple[int, tuple[AgentState, ...]]]:
    """Dedicatable agents grouped by empty slots, largest size first, each group sorted."""
    groups: dict[int, list[AgentState]] = {}
    for agent in agents:
        if can_dedicate(request, agent):
            groups.setdefault(agent.empty_slots, []).append(agent)
    return [
        (size, sort_candidates(request, groups[size], policy))
        for size in sorted(groups, reverse=True)
    ]


def _homogeneous_fit(
    needed: int, by_size: Sequence[tuple[int, tuple[AgentState, ...]]]
) -> tuple[Placement, ...] | None:
    for size, group in by_size:
        count, remainder = divmod(needed, size)
        if remainder == 0 and count <= len(group):
            return tuple(Placement(a.id, size) for a in group[:count])
    return None


def _heterogeneous_fit(
    needed: int, by_size: Sequence[tuple[int, tuple[AgentState, ...]]]
) -> tuple[Placement, ...] | None:
    # Greedy without backtracking, as in Determined: exact only for sizes that are powers of a
    # common base, and a miss here is reported as no fit rather than searched further.
    placements: list[Placement] = []
    left = needed
    for size, group in by_size:
        take = min(left // size, len(group))
        placements += [Placement(a.id, size) for a in group[:take]]
        left -= take * size
    return tuple(placements) if left == 0 else None


def reserve(
    agents: Sequence[AgentState], placements: Iterable[Placement], request: Request
) -> tuple[AgentState, ...]:
    """New agent tuple with ``request``'s placements counted as used.

    A 0-slot placement takes one aux-container place. Raises ``OverCommitError`` when an agent
    is unknown, blocked for the request, appears twice, or lacks the room, or when the
    placements do not add up to the request; the input is never modified.
    """
    placements = tuple(placements)
    if sum(p.slots for p in placements) != request.slots:
        raise OverCommitError(
            f"{request.allocation_id}: placements hold {sum(p.slots for p in placements)} "
            f"slots, request needs {request.slots}"
        )
    by_agent = _placements_by_agent(agents, placements)
    updated: list[AgentState] = []
    for agent in agents:
        placement = by_agent.get(agent.id)
        if placement is None:
            updated.append(agent)
            continue
        if agent.id in request.blocked_agents:
            raise OverCommitError(f"{request.allocation_id}: agent {agent.id} is blocked")
        updated.append(_reserve_on(agent, placement))
    return tuple(updated)


def _reserve_on(agent: AgentState, placement: Placement) -> AgentState:
    if placement.slots == 0:
        if agent.empty_zero_slots == 0:
            raise OverCommitError(f"agent {agent.id} has no free aux-container place")
        return replace(agent, zero_slot_running=agent.zero_slot_running + 1)
    if placement.slots > agent.empty_slots:
        raise OverCommitError(
            f"agent {agent.id}: {placement.slots} slots requested, {agent.empty_slots} free"
        )
    return replace(agent, used_slots=agent.used_slots + placement.slots)


def release(
    agents: Sequence[AgentState], placements: Iterable[Placement]
) -> tuple[AgentState, ...]:
    """New agent tuple with these placements freed; the inverse of ``reserve``.

    Placements on agents not in ``agents`` are skipped: an agent that disconnected has nothing
    left to free. Raises ``OverCommitError`` when more is freed than an agent holds.
    """
    known = {a.id for a in agents}
    by_agent = _placements_by_agent(agents, (p for p in placements if p.agent_id in known))
    return tuple(
        _release_on(agent, by_agent[agent.id]) if agent.id in by_agent else agent
        for agent in agents
    )


def _release_on(agent: AgentState, placement: Placement) -> AgentState:
    if placement.slots == 0:
        if agent.zero_slot_running == 0:
            raise OverCommitError(f"agent {agent.id} runs no zero-slot container")
        return replace(agent, zero_slot_running=agent.zero_slot_running - 1)
    if placement.slots > agent.used_slots:
        raise OverCommitError(
            f"agent {agent.id}: {placement.slots} slots released, {agent.used_slots} used"
        )
    return replace(agent, used_slots=agent.used_slots - placement.slots)


def _placements_by_agent(
    agents: Sequence[AgentState], placements: Iterable[Placement]
) -> dict[str, Placement]:
    known = {a.id for a in agents}
    by_agent: dict[str, Placement] = {}
    for placement in placements:
        if placement.agent_id not in known:
            raise OverCommitError(f"unknown agent {placement.agent_id}")
        if placement.agent_id in by_agent:
            raise OverCommitError(f"agent {placement.agent_id} placed twice")
        by_agent[placement.agent_id] = placement
    return by_agent


def explain_no_fit(
    request: Request,
    agents: Sequence[AgentState],
    *,
    allow_heterogeneous: bool = False,
) -> Waiting:
    """Why ``request`` cannot be placed on ``agents``, as a ``Waiting`` with a readable detail.

    Meant for requests ``find_fit`` just refused. Checks, in order: no schedulable agents,
    every agent blocked, no aux place (zero-slot), more slots than the pool holds, a shape no
    set of idle agents could take, and otherwise plain lack of free slots.
    """
    usable = [a for a in agents if a.is_schedulable]
    allowed = [a for a in usable if a.id not in request.blocked_agents]
    if not usable:
        return no_fit_waiting(request, WaitReason.NO_AGENTS, "no enabled agents in the pool")
    if not allowed:
        detail = f"all {len(usable)} enabled agents are blocked for this allocation"
        return no_fit_waiting(request, WaitReason.BLOCKED_NODES, detail)
    if request.is_zero_slot:
        cap = max(a.zero_slot_capacity for a in allowed)
        detail = f"no free aux-container place on {len(allowed)} agents (at most {cap} each)"
        return no_fit_waiting(request, WaitReason.AUX_CAPACITY, detail)
    return _explain_slotted(request, usable, allowed, allow_heterogeneous)


def _explain_slotted(
    request: Request,
    usable: Sequence[AgentState],
    allowed: Sequence[AgentState],
    allow_heterogeneous: bool,
) -> Waiting:
    wanted = f"{request.slots} slots requested"
    pool_total = sum(a.slots for a in usable)
    allowed_total = sum(a.slots for a in allowed)
    if request.slots > pool_total:
        detail = f"{wanted}, the pool has {pool_total} in total"
        return no_fit_waiting(request, WaitReason.EXCEEDS_POOL_CAPACITY, detail)
    if request.slots > allowed_total:
        detail = f"{wanted}, agents not blocked for it have {allowed_total} in total"
        return no_fit_waiting(request, WaitReason.BLOCKED_NODES, detail)
    idle = [replace(a, used_slots=0, zero_slot_running=0) for a in allowed]
    if find_fit(request, idle, allow_heterogeneous=allow_heterogeneous) is None:
        detail = shape_detail(request, [a.slots for a in allowed])
        return no_fit_waiting(request, WaitReason.NO_AGENT_FITS_GANG, detail)
    largest_free = max(a.empty_slots for a in allowed)
    detail = f"{wanted}, largest free agent has {largest_free}"
    return no_fit_waiting(request, WaitReason.INSUFFICIENT_SLOTS, detail)


def shape_detail(request: Request, agent_sizes: Iterable[int]) -> str:
    """Why no set of idle agents of these sizes (one per allowed agent) can take the request."""
    if request.single_node:
        largest = max(agent_sizes)
        return f"{request.slots} slots requested on one agent, the largest has {largest}"
    sizes = sorted(set(agent_sizes), reverse=True)
    return (
        f"{request.slots} slots requested, which no set of whole agents of sizes {sizes} "
        "adds up to; slots per task must be 1 or a multiple of slots per agent"
    )


def no_fit_waiting(request: Request, reason: WaitReason, detail: str) -> Waiting:
    """The ``Waiting`` entry for a request that does not fit, with its readable detail."""
    return Waiting(request.allocation_id, reason, detail)
