"""The agents of one scheduling pass: mutable, and indexed so that fitting scans no agent list.

``AgentPool.find_fit``, ``reserve``, ``release`` and ``explain_no_fit`` return exactly what the
functions of the same names in ``fitting`` return for ``pool.agents()``; only the cost differs.
Agents are bucketed by the values their fitting score depends on, and each bucket keeps its
agents sorted by hash number, so the best agent of a bucket is a bisection away (the hash
distance tie-break is "the nearest hash at or below the allocation's, wrapping"). A pool lives
for one pass and is never shared; the snapshot's ``AgentState`` values stay untouched.

Invariants used for speed:
- feasibility never depends on the allocation id, only on (slots, single_node, blocked agents);
- reserving only takes capacity away, so a request shape that did not fit keeps not fitting
  until something is released (``generation`` changes on releases and rollbacks only).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from resource_pools.fitting import (
    OverCommitError,
    agent_hash,
    allocation_hash,
    fraction_score,
    shape_detail,
)
from resource_pools.types import AgentState, FittingPolicy, Placement, Request, Waiting, WaitReason

_UINT64 = 1 << 64
_Entry = tuple[int, str]  # (agent hash number, agent id); buckets are sorted lists of these
_SlottedKey = tuple[int, int]  # (total slots, empty slots), agents with empty slots >= 1
_AuxKey = tuple[bool, int, int]  # (no used slots, capacity, free) a zero-slot score reads
Shape = tuple[int, bool, frozenset[str]]  # what feasibility depends on


def shape_of(request: Request) -> Shape:
    """The part of a request that decides whether it fits (not which agent it gets)."""
    return (request.slots, request.single_node, request.blocked_agents)


class AgentPool:
    """Simulated agents for one pass: fit, reserve, release, explain, and roll back."""

    def __init__(
        self,
        agents: Iterable[AgentState],
        policy: FittingPolicy = FittingPolicy.BEST,
        *,
        allow_heterogeneous: bool = False,
    ) -> None:
        self.policy = policy
        self.allow_heterogeneous = allow_heterogeneous
        self._agents: dict[str, AgentState] = {}
        for agent in agents:
            if agent.id in self._agents:
                raise ValueError(f"duplicate agent id {agent.id!r}")
            self._agents[agent.id] = agent
        self._hash = {agent_id: agent_hash(agent_id) for agent_id in self._agents}
        self._slotted: dict[_SlottedKey, list[_Entry]] = {}
        self._aux: dict[_AuxKey, list[_Entry]] = {}
        self._ranked: dict[tuple[bool, int], list[list[tuple[float, tuple[Any, ...]]]]] = {}
        self._generation = 0
        self._generations = 0
        self._no_fit: dict[Shape, int] = {}
        self._fits: dict[Shape, tuple[int]] = {}
        self._changes = 0
        self._undo: list[AgentState] | None = None
        self._saved_generation = 0
        self._shrunk = False
        for agent in self._agents.values():
            self._index(agent, add=True)
        self._static_explain()

    # --- reading ------------------------------------------------------------------------

    def agents(self) -> tuple[AgentState, ...]:
        """The agents as the simulation has them now, in the order they were given."""
        return tuple(self._agents.values())

    @property
    def generation(self) -> int:
        """Changes whenever capacity may have grown (a release or a rollback)."""
        return self._generation

    @property
    def changes(self) -> int:
        """Counts every change of any agent; equal counts mean an unchanged pool."""
        return self._changes

    def fits(self, request: Request) -> bool:
        """Whether ``find_fit`` would place ``request`` now (cached per shape and state)."""
        shape = shape_of(request)
        if self._no_fit.get(shape) == self._generation:
            return False
        cached = self._fits.get(shape)
        if cached is not None and cached[0] == self._changes:
            return True
        if self._find(request) is None:
            self._no_fit[shape] = self._generation
            return False
        self._fits[shape] = (self._changes,)
        return True

    def find_fit(self, request: Request) -> tuple[Placement, ...] | None:
        """``fitting.find_fit(request, self.agents(), policy, ...)``, without scanning agents."""
        shape = shape_of(request)
        if self._no_fit.get(shape) == self._generation:
            return None
        fit = self._find(request)
        if fit is None:
            self._no_fit[shape] = self._generation
        return fit

    def _find(self, request: Request) -> tuple[Placement, ...] | None:
        x = allocation_hash(request.allocation_id)
        best = self._best_shared(request, x)
        if best is not None:
            return (Placement(best, request.slots),)
        if request.slots <= 1 or request.single_node:
            return None
        by_size = self._dedicated_by_size(request.blocked_agents)
        fit = _homogeneous(request.slots, by_size, x, request.blocked_agents)
        if fit is None and self.allow_heterogeneous:
            fit = _heterogeneous(request.slots, by_size, x, request.blocked_agents)
        return fit

    def _best_shared(self, request: Request, x: int) -> str | None:
        zero = request.is_zero_slot
        buckets: dict[Any, list[_Entry]] = self._aux if zero else self._slotted
        for tied in self._ranked_buckets(zero, request.slots):
            best: tuple[int, str] | None = None
            for _, key in tied:
                found = _nearest(buckets[key], x, request.blocked_agents)
                if found is not None and (best is None or found < best):
                    best = found
            if best is not None:
                return best[1]
        return None

    def _ranked_buckets(self, zero: bool, slots: int) -> list[list[tuple[float, tuple[Any, ...]]]]:
        """Buckets that can hold ``slots`` (or an aux container), grouped by equal score."""
        cached = self._ranked.get((zero, slots))
        if cached is not None:
            return cached
        scored: list[tuple[float, tuple[Any, ...]]]
        if zero:
            scored = [(self._aux_score(k), k) for k in self._aux]
        else:
            scored = [
                (fraction_score(self.policy, t, e), (t, e)) for t, e in self._slotted if e >= slots
            ]
        scored.sort(key=lambda item: -item[0])
        groups: list[list[tuple[float, tuple[Any, ...]]]] = []
        for item in scored:
            if groups and groups[-1][0][0] == item[0]:
                groups[-1].append(item)
            else:
                groups.append([item])
        self._ranked[(zero, slots)] = groups
        return groups

    def _aux_score(self, key: _AuxKey) -> float:
        unused, capacity, free = key
        if unused and capacity == 0:
            return 0.0
        return fraction_score(self.policy, capacity, free)

    def _dedicated_by_size(self, blocked: frozenset[str]) -> list[tuple[int, list[_Entry], int]]:
        """(size, bucket, usable count) of whole unused agents, largest size first."""
        out = []
        for (total, empty), bucket in self._slotted.items():
            if total == empty:
                out.append((empty, bucket, len(bucket) - self._blocked_in(bucket, blocked)))
        out.sort(key=lambda item: -item[0])
        return out

    def _blocked_in(self, bucket: list[_Entry], blocked: frozenset[str]) -> int:
        count = 0
        for agent_id in blocked:
            h = self._hash.get(agent_id)
            if h is None:
                continue
            i = bisect_left(bucket, (h, agent_id))
            count += i < len(bucket) and bucket[i] == (h, agent_id)
        return count

    # --- changing -----------------------------------------------------------------------

    def reserve(self, placements: Iterable[Placement], request: Request) -> None:
        """``fitting.reserve`` in place; raises the same errors and then changes nothing."""
        placements = tuple(placements)
        total = sum(p.slots for p in placements)
        if total != request.slots:
            raise OverCommitError(
                f"{request.allocation_id}: placements hold {total} slots, "
                f"request needs {request.slots}"
            )
        self._check_placements(placements)
        updated: list[AgentState] = []
        for placement in placements:
            agent = self._agents[placement.agent_id]
            if agent.id in request.blocked_agents:
                raise OverCommitError(f"{request.allocation_id}: agent {agent.id} is blocked")
            updated.append(_reserve_on(agent, placement))
        self._shrunk = True
        for agent in updated:
            self._set(agent)

    def release(self, placements: Iterable[Placement]) -> None:
        """``fitting.release`` in place: placements on unknown agents are skipped."""
        known = tuple(p for p in placements if p.agent_id in self._agents)
        self._check_placements(known)
        updated = [_release_on(self._agents[p.agent_id], p) for p in known]
        if updated:
            self._grow()
        for agent in updated:
            self._set(agent)

    def restore(self, placements: Iterable[Placement]) -> None:
        """Take back exactly what ``release`` freed for these placements (no capacity check)."""
        known = tuple(p for p in placements if p.agent_id in self._agents)
        self._check_placements(known)
        self._shrunk = True
        for agent in [_unrelease_on(self._agents[p.agent_id], p) for p in known]:
            self._set(agent)

    def begin(self) -> None:
        """Start recording changes so that ``rollback`` can undo them."""
        if self._undo is not None:
            raise RuntimeError("a change record is already open")
        self._undo = []
        self._saved_generation = self._generation
        self._shrunk = False

    def commit(self) -> None:
        """Keep the changes made since ``begin``."""
        self._undo = None

    def rollback(self) -> None:
        """Undo every change since ``begin``; the pool is then exactly as it was."""
        undo, self._undo = self._undo, None
        if undo is None:
            raise RuntimeError("no change record is open")
        for old in reversed(undo):
            self._set(old, record=False)
        # Undoing a reservation gives capacity back, so failures seen since may not hold.
        if self._shrunk:
            self._grow()
        else:
            self._generation = self._saved_generation

    def _check_placements(self, placements: Sequence[Placement]) -> None:
        seen: set[str] = set()
        for placement in placements:
            if placement.agent_id not in self._agents:
                raise OverCommitError(f"unknown agent {placement.agent_id}")
            if placement.agent_id in seen:
                raise OverCommitError(f"agent {placement.agent_id} placed twice")
            seen.add(placement.agent_id)

    def _grow(self) -> None:
        self._generations += 1
        self._generation = self._generations

    def _set(self, agent: AgentState, *, record: bool = True) -> None:
        old = self._agents[agent.id]
        if record and self._undo is not None:
            self._undo.append(old)
        self._index(old, add=False)
        self._agents[agent.id] = agent
        self._index(agent, add=True)
        self._changes += 1

    def _index(self, agent: AgentState, *, add: bool) -> None:
        entry = (self._hash[agent.id], agent.id)
        empty = agent.empty_slots
        if empty >= 1:
            _update(self._slotted, (agent.total_slots, empty), entry, add, self._ranked)
        if agent.empty_zero_slots > 0:
            if agent.used_slots == 0:
                key: _AuxKey = (True, agent.zero_slot_capacity, agent.empty_zero_slots)
            else:
                key = (False, agent.total_slots, empty)
            _update(self._aux, key, entry, add, self._ranked)

    # --- explaining ---------------------------------------------------------------------

    def _static_explain(self) -> None:
        usable = [a for a in self._agents.values() if a.is_schedulable]
        self._usable = {a.id: a for a in usable}
        self._sizes = Counter(a.slots for a in usable)
        self._aux_caps = Counter(a.max_zero_slot for a in usable)
        self._pool_total = sum(a.slots for a in usable)
        self._idle_fits: dict[tuple[int, bool, frozenset[str]], bool] = {}
        self._explained: dict[Shape, tuple[WaitReason, str]] = {}
        self._explained_at = 0

    def explain_no_fit(self, request: Request) -> Waiting:
        """``fitting.explain_no_fit(request, self.agents(), ...)`` from the indexes."""
        if self._explained_at != self._changes:
            self._explained.clear()
            self._explained_at = self._changes
        shape = shape_of(request)
        known = self._explained.get(shape)
        if known is None:
            known = self._explained[shape] = self._explain(request)
        return Waiting(request.allocation_id, *known)

    def _explain(self, request: Request) -> tuple[WaitReason, str]:
        blocked = [self._usable[i] for i in request.blocked_agents if i in self._usable]
        allowed = len(self._usable) - len(blocked)
        if not self._usable:
            return WaitReason.NO_AGENTS, "no enabled agents in the pool"
        if allowed == 0:
            detail = f"all {len(self._usable)} enabled agents are blocked for this allocation"
            return WaitReason.BLOCKED_NODES, detail
        if request.is_zero_slot:
            caps = self._aux_caps - Counter(a.max_zero_slot for a in blocked)
            detail = f"no free aux-container place on {allowed} agents (at most {max(caps)} each)"
            return WaitReason.AUX_CAPACITY, detail
        wanted = f"{request.slots} slots requested"
        allowed_total = self._pool_total - sum(a.slots for a in blocked)
        if request.slots > self._pool_total:
            return (
                WaitReason.EXCEEDS_POOL_CAPACITY,
                f"{wanted}, the pool has {self._pool_total} in total",
            )
        if request.slots > allowed_total:
            detail = f"{wanted}, agents not blocked for it have {allowed_total} in total"
            return WaitReason.BLOCKED_NODES, detail
        sizes = self._sizes - Counter(a.slots for a in blocked) if blocked else self._sizes
        if not self._fits_idle(request, sizes, frozenset(a.id for a in blocked)):
            return WaitReason.NO_AGENT_FITS_GANG, shape_detail(request, list(sizes))
        largest = self._largest_free(request.blocked_agents)
        return WaitReason.INSUFFICIENT_SLOTS, f"{wanted}, largest free agent has {largest}"

    def _fits_idle(self, request: Request, sizes: Counter[int], blocked: frozenset[str]) -> bool:
        """Whether the request would fit with every allowed agent idle (a static question)."""
        key = (request.slots, request.single_node, blocked)
        known = self._idle_fits.get(key)
        if known is not None:
            return known
        present = sorted((s for s, n in sizes.items() if n > 0 and s > 0), reverse=True)
        fits = bool(present) and present[0] >= request.slots
        if not fits and request.slots > 1 and not request.single_node:
            fits = any(request.slots % s == 0 and request.slots // s <= sizes[s] for s in present)
            if not fits and self.allow_heterogeneous:
                left = request.slots
                for s in present:
                    left -= min(left // s, sizes[s]) * s
                fits = left == 0
        self._idle_fits[key] = fits
        return fits

    def _largest_free(self, blocked: frozenset[str]) -> int:
        for empty in sorted({e for _, e in self._slotted}, reverse=True):
            for (_, e), bucket in self._slotted.items():
                if e == empty and len(bucket) > self._blocked_in(bucket, blocked):
                    return empty
        return 0


def _update(
    index: dict[Any, list[_Entry]],
    key: tuple[Any, ...],
    entry: _Entry,
    add: bool,
    ranked: dict[Any, Any],
) -> None:
    bucket = index.get(key)
    if add:
        if bucket is None:
            index[key] = [entry]
            ranked.clear()
        else:
            insort(bucket, entry)
        return
    assert bucket is not None
    del bucket[bisect_left(bucket, entry)]
    if not bucket:
        del index[key]
        ranked.clear()


def _by_distance(bucket: list[_Entry], x: int) -> Iterator[_Entry]:
    """A bucket's entries by hash distance from ``x``, nearest first (equal hashes: by id).

    The distance (x - hash) mod 2**64 grows as the hash falls from ``x``, then wraps to the
    largest hash: hashes <= x in descending order, then the others in descending order.
    """
    split = bisect_left(bucket, (x + 1,))
    for lo, hi in ((0, split), (split, len(bucket))):
        pos = hi - 1
        while pos >= lo:
            start = bisect_left(bucket, (bucket[pos][0],), lo, pos + 1)
            yield from bucket[start : pos + 1]
            pos = start - 1


def _nearest(bucket: list[_Entry], x: int, blocked: frozenset[str]) -> tuple[int, str] | None:
    """(distance, agent id) of the bucket's nearest agent not in ``blocked``, or None."""
    split = bisect_left(bucket, (x + 1,))
    pos = split - 1 if split else len(bucket) - 1
    h, agent_id = bucket[pos]
    if agent_id not in blocked and (pos == 0 or bucket[pos - 1][0] != h):
        return ((x - h) % _UINT64, agent_id)  # the common case: no tie, not blocked
    for h, agent_id in _by_distance(bucket, x):
        if agent_id not in blocked:
            return ((x - h) % _UINT64, agent_id)
    return None


def _take(bucket: list[_Entry], x: int, blocked: frozenset[str], count: int) -> list[str]:
    out: list[str] = []
    if count <= 0:
        return out
    for _, agent_id in _by_distance(bucket, x):
        if agent_id not in blocked:
            out.append(agent_id)
            if len(out) == count:
                break
    return out


def _homogeneous(
    needed: int,
    by_size: Sequence[tuple[int, list[_Entry], int]],
    x: int,
    blocked: frozenset[str],
) -> tuple[Placement, ...] | None:
    for size, bucket, usable in by_size:
        if usable == 0:
            continue
        count, remainder = divmod(needed, size)
        if remainder == 0 and count <= usable:
            return tuple(Placement(a, size) for a in _take(bucket, x, blocked, count))
    return None


def _heterogeneous(
    needed: int,
    by_size: Sequence[tuple[int, list[_Entry], int]],
    x: int,
    blocked: frozenset[str],
) -> tuple[Placement, ...] | None:
    placements: list[Placement] = []
    left = needed
    for size, bucket, usable in by_size:
        take = min(left // size, usable)
        placements += [Placement(a, size) for a in _take(bucket, x, blocked, take)]
        left -= take * size
    return tuple(placements) if left == 0 else None


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


def _unrelease_on(agent: AgentState, placement: Placement) -> AgentState:
    if placement.slots == 0:
        return replace(agent, zero_slot_running=agent.zero_slot_running + 1)
    return replace(agent, used_slots=agent.used_slots + placement.slots)


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
