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
  until something is released (``generation`` changes on releases and some rollbacks only).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from resource_pools.agent_pool_explain import StaticAgents, explain
from resource_pools.fitting import OverCommitError, agent_hash, allocation_hash, fraction_score
from resource_pools.types import AgentState, FittingPolicy, Placement, Request, Waiting, WaitReason

_UINT64 = 1 << 64
_Entry = tuple[int, str]  # (agent hash number, agent id); buckets are sorted lists of these
# Slotted requests score on (total slots, empty slots): agents with empty slots >= 1.
# Zero-slot requests score on (no used slots, capacity, free): agents with a free aux place.
_Key = tuple[Any, ...]
_Ranked = list[list[tuple[float, _Key]]]
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
        self._base: dict[str, AgentState] = {}
        for agent in agents:
            if agent.id in self._base:
                raise ValueError(f"duplicate agent id {agent.id!r}")
            self._base[agent.id] = agent
        self._hash = {agent_id: agent_hash(agent_id) for agent_id in self._base}
        self._static = StaticAgents(self._base.values())
        # Mutable state: used slots and running aux containers per agent, and the indexes.
        self._used = {a.id: a.used_slots for a in self._base.values()}
        self._aux_running = {a.id: a.zero_slot_running for a in self._base.values()}
        self._slot_key: dict[str, _Key | None] = {}
        self._aux_key: dict[str, _Key | None] = {}
        self._slotted: dict[_Key, list[_Entry]] = {}
        self._aux: dict[_Key, list[_Entry]] = {}
        for agent_id in self._base:
            slot_key, aux_key = self._keys(agent_id)
            self._slot_key[agent_id], self._aux_key[agent_id] = slot_key, aux_key
            if slot_key is not None:
                self._slotted.setdefault(slot_key, []).append((self._hash[agent_id], agent_id))
            if aux_key is not None:
                self._aux.setdefault(aux_key, []).append((self._hash[agent_id], agent_id))
        for bucket in (*self._slotted.values(), *self._aux.values()):
            bucket.sort()
        self._ranked: dict[tuple[bool, int], _Ranked] = {}
        self._generation = 0
        self._generations = [0]  # shared by copies, so generations are never reused
        self._no_fit: dict[Shape, int] = {}
        self._fits: dict[Shape, int] = {}
        self._explained: dict[Shape, tuple[WaitReason, str]] = {}
        self._explained_at = 0
        self._changes = 0
        # The last fit find_fit returned, for whom, at which change count.
        self._found: tuple[tuple[Placement, ...], Request, int] | None = None
        self._undo: list[tuple[str, int, int]] | None = None
        self._saved_generation = 0
        self._shrunk = False

    def copy(self) -> AgentPool:
        """An independent pool in the same state (cheaper than building one)."""
        other = object.__new__(AgentPool)
        other.__dict__.update(self.__dict__)
        other._used = dict(self._used)
        other._aux_running = dict(self._aux_running)
        other._slot_key = dict(self._slot_key)
        other._aux_key = dict(self._aux_key)
        other._slotted = {k: list(v) for k, v in self._slotted.items()}
        other._aux = {k: list(v) for k, v in self._aux.items()}
        other._ranked = dict(self._ranked)
        other._no_fit = dict(self._no_fit)
        other._fits = dict(self._fits)
        other._explained = dict(self._explained)
        other._found = None
        if self._undo is not None:
            raise RuntimeError("cannot copy a pool with an open change record")
        return other

    # --- reading ------------------------------------------------------------------------

    def agents(self) -> tuple[AgentState, ...]:
        """The agents as the simulation has them now, in the order they were given."""
        out = []
        for agent_id, base in self._base.items():
            used, running = self._used[agent_id], self._aux_running[agent_id]
            if (used, running) != (base.used_slots, base.zero_slot_running):
                base = replace(base, used_slots=used, zero_slot_running=running)
            out.append(base)
        return tuple(out)

    @property
    def generation(self) -> int:
        """Changes whenever capacity may have grown (a release, or undoing a reservation)."""
        return self._generation

    def known_not_to_fit(self, shape: Shape) -> bool:
        """True when a request of this shape is already known not to fit now (no search)."""
        return self._no_fit.get(shape) == self._generation

    def fits(self, request: Request) -> bool:
        """Whether ``find_fit`` would place ``request`` now (cached per shape and state)."""
        shape = (request.slots, request.single_node, request.blocked_agents)  # shape_of
        if self._no_fit.get(shape) == self._generation:
            return False
        if self._fits.get(shape) == self._changes:
            return True
        if self._find(request) is None:
            self._no_fit[shape] = self._generation
            return False
        self._fits[shape] = self._changes
        return True

    def find_fit(self, request: Request) -> tuple[Placement, ...] | None:
        """``fitting.find_fit(request, self.agents(), policy, ...)``, without scanning agents."""
        shape = (request.slots, request.single_node, request.blocked_agents)  # shape_of
        if self._no_fit.get(shape) == self._generation:
            return None
        fit = self._find(request)
        if fit is None:
            self._no_fit[shape] = self._generation
        else:
            self._found = (fit, request, self._changes)
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
        buckets = self._aux if zero else self._slotted
        blocked = request.blocked_agents
        for tied in self._ranked_buckets(zero, request.slots):
            best: tuple[int, str] | None = None
            for _, key in tied:
                bucket = buckets[key]
                found = _nearest(bucket, x, blocked) if bucket else None
                if found is not None and (best is None or found < best):
                    best = found
            if best is not None:
                return best[1]
        return None

    def _ranked_buckets(self, zero: bool, slots: int) -> _Ranked:
        """Buckets that can hold ``slots`` (or an aux container), grouped by equal score.

        Emptied buckets are kept (and skipped when searched), so the ranking only changes
        when a bucket of a new key appears.
        """
        cached = self._ranked.get((zero, slots))
        if cached is not None:
            return cached
        if zero:
            scored = [(self._aux_score(k), k) for k in self._aux]
        else:
            scored = [(fraction_score(self.policy, k[0], k[1]), k) for k in self._slotted]
            scored = [item for item in scored if item[1][1] >= slots]
        scored.sort(key=lambda item: -item[0])
        groups: _Ranked = []
        for item in scored:
            if groups and groups[-1][0][0] == item[0]:
                groups[-1].append(item)
            else:
                groups.append([item])
        self._ranked[(zero, slots)] = groups
        return groups

    def _aux_score(self, key: _Key) -> float:
        unused, capacity, free = key
        if unused and capacity == 0:
            return 0.0
        return fraction_score(self.policy, capacity, free)

    def _dedicated_by_size(self, blocked: frozenset[str]) -> list[tuple[int, list[_Entry], int]]:
        """(size, bucket, allowed count) of whole unused agents, largest size first."""
        out = []
        for (total, empty), bucket in self._slotted.items():
            if total == empty and bucket:
                out.append((empty, bucket, len(bucket) - self._blocked_in(bucket, blocked)))
        out.sort(key=lambda item: -item[0])
        return out

    def _blocked_in(self, bucket: list[_Entry], blocked: frozenset[str]) -> int:
        count = 0
        for agent_id in blocked:
            h = self._hash.get(agent_id)
            if h is not None:
                i = bisect_left(bucket, (h, agent_id))
                count += i < len(bucket) and bucket[i] == (h, agent_id)
        return count

    def _keys(self, agent_id: str) -> tuple[_Key | None, _Key | None]:
        """(slotted bucket key, aux bucket key) for the agent's current usage; None: not in it."""
        slots, max_zero, enabled, draining = self._static.shape[agent_id]
        used, running = self._used[agent_id], self._aux_running[agent_id]
        if draining:
            total, empty, capacity = used, 0, running
        elif enabled:
            total, empty, capacity = slots, max(0, slots - used), max_zero
        else:
            total, empty, capacity = 0, 0, 0
        slot_key = (total, empty) if empty >= 1 else None
        aux_key: _Key | None = None
        if capacity > running:
            aux_key = (True, capacity, capacity - running) if used == 0 else (False, total, empty)
        return slot_key, aux_key

    # --- changing -----------------------------------------------------------------------

    def reserve(self, placements: Iterable[Placement], request: Request) -> None:
        """``fitting.reserve`` in place; raises the same errors, and then changes nothing."""
        placements = tuple(placements)
        found, self._found = self._found, None
        # This pool's own fit for this request, with nothing changed since, is valid as it is.
        own = (
            found is not None
            and found[0] is placements
            and found[1] is request
            and found[2] == self._changes
        )
        if own:
            self._commit_reserve(placements)
            return
        total = sum(p.slots for p in placements)
        if total != request.slots:
            raise OverCommitError(
                f"{request.allocation_id}: placements hold {total} slots, "
                f"request needs {request.slots}"
            )
        self._check_placements(placements)
        for p in placements:
            if p.agent_id in request.blocked_agents:
                raise OverCommitError(f"{request.allocation_id}: agent {p.agent_id} is blocked")
            if p.slots == 0:
                if self._aux_key[p.agent_id] is None:
                    raise OverCommitError(f"agent {p.agent_id} has no free aux-container place")
            else:
                empty = self._slot_key[p.agent_id]
                free = 0 if empty is None else empty[1]
                if p.slots > free:
                    raise OverCommitError(
                        f"agent {p.agent_id}: {p.slots} slots requested, {free} free"
                    )
        self._commit_reserve(placements)

    def _commit_reserve(self, placements: tuple[Placement, ...]) -> None:
        self._shrunk = True
        for p in placements:
            self._change(p, +1)

    def release(self, placements: Iterable[Placement]) -> None:
        """``fitting.release`` in place: placements on unknown agents are skipped."""
        known = [p for p in placements if p.agent_id in self._base]
        if not known:
            return
        if len(known) > 1:
            self._check_placements(known)
        for p in known:
            if p.slots == 0 and self._aux_running[p.agent_id] == 0:
                raise OverCommitError(f"agent {p.agent_id} runs no zero-slot container")
            if p.slots > self._used[p.agent_id]:
                raise OverCommitError(
                    f"agent {p.agent_id}: {p.slots} slots released, {self._used[p.agent_id]} used"
                )
        self._generations[0] += 1
        self._generation = self._generations[0]
        for p in known:
            self._change(p, -1)

    def restore(self, placements: Iterable[Placement]) -> None:
        """Take back exactly what ``release`` freed for these placements (no capacity check)."""
        known = tuple(p for p in placements if p.agent_id in self._base)
        self._check_placements(known)
        self._shrunk = True
        for p in known:
            self._change(p, +1)

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
        for agent_id, used, running in reversed(undo):
            self._set(agent_id, used, running)
        # Undoing a reservation gives capacity back, so failures seen since may not hold.
        if self._shrunk:
            self._generations[0] += 1
            self._generation = self._generations[0]
        else:
            self._generation = self._saved_generation

    def _check_placements(self, placements: Sequence[Placement]) -> None:
        seen: set[str] = set()
        for placement in placements:
            if placement.agent_id not in self._base:
                raise OverCommitError(f"unknown agent {placement.agent_id}")
            if placement.agent_id in seen:
                raise OverCommitError(f"agent {placement.agent_id} placed twice")
            seen.add(placement.agent_id)

    def _change(self, placement: Placement, sign: int) -> None:
        agent_id = placement.agent_id
        used, running = self._used[agent_id], self._aux_running[agent_id]
        if self._undo is not None:
            self._undo.append((agent_id, used, running))
        if placement.slots == 0:
            self._set(agent_id, used, running + sign)
        else:
            self._set(agent_id, used + sign * placement.slots, running)

    def _set(self, agent_id: str, used: int, running: int) -> None:
        self._used[agent_id], self._aux_running[agent_id] = used, running
        self._changes += 1
        entry = (self._hash[agent_id], agent_id)
        slot_key, aux_key = self._keys(agent_id)
        old = self._slot_key[agent_id]
        if slot_key != old:
            self._slot_key[agent_id] = slot_key
            self._move(self._slotted, old, slot_key, entry)
        old = self._aux_key[agent_id]
        if aux_key != old:
            self._aux_key[agent_id] = aux_key
            self._move(self._aux, old, aux_key, entry)

    def _move(
        self, index: dict[_Key, list[_Entry]], old: _Key | None, new: _Key | None, entry: _Entry
    ) -> None:
        if old is not None:
            bucket = index[old]
            del bucket[bisect_left(bucket, entry)]
        if new is not None:
            bucket = index.get(new)
            if bucket is None:
                index[new] = [entry]
                self._ranked.clear()
            else:
                insort(bucket, entry)

    # --- explaining ---------------------------------------------------------------------

    def explain_no_fit(self, request: Request) -> Waiting:
        """``fitting.explain_no_fit(request, self.agents(), ...)``, from the indexes."""
        if self._explained_at != self._changes:
            self._explained.clear()
            self._explained_at = self._changes
        shape = shape_of(request)
        known = self._explained.get(shape)
        if known is None:
            known = explain(self._static, request, self._largest_free, self.allow_heterogeneous)
            self._explained[shape] = known
        return Waiting(request.allocation_id, *known)

    def _largest_free(self, blocked: frozenset[str]) -> int:
        """The most empty slots on one agent not in ``blocked``."""
        for (_, empty), bucket in sorted(self._slotted.items(), key=lambda kv: -kv[0][1]):
            if len(bucket) > self._blocked_in(bucket, blocked):
                return empty
        return 0


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
    for size, bucket, allowed in by_size:
        if allowed == 0:
            continue
        count, remainder = divmod(needed, size)
        if remainder == 0 and count <= allowed:
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
    for size, bucket, allowed in by_size:
        take = min(left // size, allowed)
        placements += [Placement(a, size) for a in _take(bucket, x, blocked, take)]
        left -= take * size
    return tuple(placements) if left == 0 else None
