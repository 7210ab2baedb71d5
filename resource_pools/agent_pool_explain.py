"""Why a request does not fit, worked out from counts instead of a scan of every agent.

Gives the same reason and detail as ``fitting.explain_no_fit``. Everything it reads is fixed
for a pass (which agents are schedulable, their sizes and aux caps) except the largest free
agent, which the caller supplies from its index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from resource_pools.fitting import shape_detail
from resource_pools.types import AgentState, Request, WaitReason


class StaticAgents:
    """What fitting reads of a pool's agents that a simulation never changes."""

    def __init__(self, agents: Iterable[AgentState]) -> None:
        agents = list(agents)
        self.shape = {a.id: (a.slots, a.max_zero_slot, a.enabled, a.draining) for a in agents}
        self.usable = {a.id: a for a in agents if a.is_schedulable}
        self.sizes = Counter(a.slots for a in self.usable.values())
        self.aux_caps = Counter(a.max_zero_slot for a in self.usable.values())
        self.total = sum(a.slots for a in self.usable.values())
        self._idle_fits: dict[tuple[int, bool, frozenset[str]], bool] = {}

    def fits_idle(
        self, request: Request, sizes: Counter[int], blocked: frozenset[str], heterogeneous: bool
    ) -> bool:
        """Whether ``find_fit`` would place the request with every allowed agent idle."""
        key = (request.slots, request.single_node, blocked)
        known = self._idle_fits.get(key)
        if known is None:
            known = self._idle_fits[key] = _fits_idle(request, sizes, heterogeneous)
        return known


def _fits_idle(request: Request, sizes: Counter[int], heterogeneous: bool) -> bool:
    present = sorted((s for s, n in sizes.items() if n > 0 and s > 0), reverse=True)
    if present and present[0] >= request.slots:
        return True  # one idle agent is big enough (shared fit)
    if request.slots <= 1 or request.single_node:
        return False
    if any(request.slots % s == 0 and request.slots // s <= sizes[s] for s in present):
        return True
    if not heterogeneous:
        return False
    left = request.slots
    for s in present:
        left -= min(left // s, sizes[s]) * s
    return left == 0


def explain(
    static: StaticAgents,
    request: Request,
    largest_free: Callable[[frozenset[str]], int],
    heterogeneous: bool,
) -> tuple[WaitReason, str]:
    """(reason, detail) of ``fitting.explain_no_fit`` for a request that did not fit."""
    blocked = [static.usable[i] for i in request.blocked_agents if i in static.usable]
    allowed = len(static.usable) - len(blocked)
    if not static.usable:
        return WaitReason.NO_AGENTS, "no enabled agents in the pool"
    if allowed == 0:
        detail = f"all {len(static.usable)} enabled agents are blocked for this allocation"
        return WaitReason.BLOCKED_NODES, detail
    if request.is_zero_slot:
        caps = static.aux_caps - Counter(a.max_zero_slot for a in blocked)
        detail = f"no free aux-container place on {allowed} agents (at most {max(caps)} each)"
        return WaitReason.AUX_CAPACITY, detail
    wanted = f"{request.slots} slots requested"
    allowed_total = static.total - sum(a.slots for a in blocked)
    if request.slots > static.total:
        return WaitReason.EXCEEDS_POOL_CAPACITY, f"{wanted}, the pool has {static.total} in total"
    if request.slots > allowed_total:
        detail = f"{wanted}, agents not blocked for it have {allowed_total} in total"
        return WaitReason.BLOCKED_NODES, detail
    sizes = static.sizes - Counter(a.slots for a in blocked) if blocked else static.sizes
    blocked_ids = frozenset(a.id for a in blocked)
    if not static.fits_idle(request, sizes, blocked_ids, heterogeneous):
        return WaitReason.NO_AGENT_FITS_GANG, shape_detail(request, list(sizes))
    largest = largest_free(request.blocked_agents)
    return WaitReason.INSUFFICIENT_SLOTS, f"{wanted}, largest free agent has {largest}"
