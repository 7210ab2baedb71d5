"""Rendezvous of a multi-container allocation: who its containers are and where they run.

Each container of a trial asks `GET /api/v1/allocations/{id}/resources/{rid}/rendezvous` before
it starts the user's processes. The answer waits until every container of the allocation has
asked, then names all of them: their addresses (the agent's address as the master sees it),
this container's rank, and each container's slot count. Ranks: the allocation's first
container (resources id ``<allocation>-0``) is rank 0, the others follow in placement order,
which is the order of their resources ids (Determined: rank 0 first, then by resources id).

Arrivals are kept in memory, per master process (`RendezvousBoard`); a container that asks
again (a retried request) counts once. A rendezvous that does not complete within the
configured timeout (10 minutes, as in Determined) fails with Determined's message and the
allocation is killed. A completed rendezvous marks the allocation ready.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from controlplane.db.models import Allocation
from controlplane.domain.errors import Conflict, DomainError, NotFound

TIMEOUT_MESSAGE = "some containers are taking a long time to connect"
_FINISHED_KEPT = 4096  # completed rendezvous remembered for late, retried calls


class RendezvousTimeout(DomainError):
    """The containers did not all arrive in time (answered 500, as an internal error)."""


@dataclass(frozen=True)
class Member:
    """One container of an allocation."""

    resources_id: str
    agent_id: str
    slots: int


@dataclass(frozen=True)
class RendezvousInfo:
    addresses: list[str]
    rank: int
    slots: list[int]


def members(alloc: Allocation) -> list[Member]:
    """The allocation's containers in rank order (the order the scheduler numbered them in)."""
    placement: Mapping[str, list[int]] = alloc.placement or {}
    return [
        Member(resources_id=f"{alloc.allocation_id}-{rank}", agent_id=agent, slots=len(devices))
        for rank, (agent, devices) in enumerate(sorted(placement.items()))
    ]


def info_for(
    group: list[Member], resources_id: str, address_of: Callable[[str], str]
) -> RendezvousInfo:
    ids = [m.resources_id for m in group]
    return RendezvousInfo(
        addresses=[address_of(m.agent_id) for m in group],
        rank=ids.index(resources_id),
        slots=[m.slots for m in group],
    )


def member_of(alloc: Allocation, resources_id: str) -> list[Member]:
    """The allocation's members; NotFound unless ``resources_id`` is one of them."""
    group = members(alloc)
    if resources_id not in {m.resources_id for m in group}:
        raise NotFound(f"resources {resources_id} not found in allocation {alloc.allocation_id}")
    return group


@dataclass
class _Gathering:
    expected: frozenset[str]
    arrived: set[str] = field(default_factory=set)
    done: asyncio.Event = field(default_factory=asyncio.Event)


class RendezvousBoard:
    """Who has arrived at which allocation's rendezvous (in memory, one per master)."""

    def __init__(self) -> None:
        self._open: dict[str, _Gathering] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()

    def arrive(self, allocation_id: str, resources_id: str, expected: frozenset[str]) -> bool:
        """Record an arrival; True when everyone has now arrived (or had already)."""
        if allocation_id in self._finished:
            return True
        gathering = self._open.get(allocation_id)
        if gathering is None or gathering.expected != expected:
            gathering = self._open[allocation_id] = _Gathering(expected=expected)
        gathering.arrived.add(resources_id)
        if gathering.arrived >= gathering.expected:
            self._finish(allocation_id)
            return True
        return False

    def _finish(self, allocation_id: str) -> None:
        gathering = self._open.pop(allocation_id, None)
        if gathering is not None:
            gathering.done.set()
        self._finished[allocation_id] = None
        while len(self._finished) > _FINISHED_KEPT:
            self._finished.popitem(last=False)

    def complete(self, allocation_id: str) -> bool:
        return allocation_id in self._finished

    async def wait(self, allocation_id: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for everyone; True once they have all arrived."""
        if allocation_id in self._finished:
            return True
        gathering = self._open.get(allocation_id)
        if gathering is None:
            return False
        try:
            await asyncio.wait_for(gathering.done.wait(), timeout)
        except TimeoutError:
            return allocation_id in self._finished
        return True

    def forget(self, allocation_id: str) -> None:
        """Drop an allocation that will never gather (it ended or timed out)."""
        self._open.pop(allocation_id, None)


def ended(alloc: Allocation) -> Conflict:
    return Conflict(
        f"allocation {alloc.allocation_id} has ended ({alloc.exit_reason or alloc.state}); "
        "there is nothing to rendezvous with"
    )
