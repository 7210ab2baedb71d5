"""An in-memory DistributedContext: N ranks as threads of one process, for checkpoint tests.

It honours the public contract of ``DistributedContext``: ``allgather``/``gather``/``broadcast``
over all ranks (rank order; ``gather`` answers None off the chief; ``broadcast`` answers the
chief's value) and the ``_local`` forms over the ranks of one simulated node. Every collective
waits at most ``timeout`` seconds for the others, so a rank that skips one fails the test
instead of hanging it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from harness.core import DistributedContext

T = TypeVar("T")


class _Exchange:
    def __init__(self, size: int, timeout: float) -> None:
        self.size = size
        self.slots: list[Any] = [None] * size
        self.barrier = threading.Barrier(size, timeout=timeout)

    def swap(self, index: int, value: Any) -> list[Any]:
        self.slots[index] = value
        self.barrier.wait()
        out = list(self.slots)
        self.barrier.wait()
        return out


class ThreadDist(DistributedContext):
    """One rank; build a whole group with ``group()``."""

    def __init__(self, rank: int, world: _Exchange, node: _Exchange, local_size: int) -> None:
        # Deliberately not DistributedContext.__init__: that would set up torch.distributed.
        self.rank = rank
        self.size = world.size
        self.local_rank = rank % local_size
        self.local_size = local_size
        self.cross_rank = rank // local_size
        self.cross_size = world.size // local_size
        self._chief_ip = "127.0.0.1"
        self._world = world
        self._node = node
        self.calls: list[str] = []

    def gather(self, stuff: Any) -> list[Any] | None:
        self.calls.append("gather")
        out = self._world.swap(self.rank, stuff)
        return out if self.rank == 0 else None

    def allgather(self, stuff: Any) -> list[Any]:
        self.calls.append("allgather")
        return self._world.swap(self.rank, stuff)

    def broadcast(self, stuff: Any) -> Any:
        self.calls.append("broadcast")
        return self._world.swap(self.rank, stuff)[0]

    def gather_local(self, stuff: Any) -> list[Any] | None:
        self.calls.append("gather_local")
        out = self._node.swap(self.local_rank, stuff)
        return out if self.local_rank == 0 else None

    def allgather_local(self, stuff: Any) -> list[Any]:
        self.calls.append("allgather_local")
        return self._node.swap(self.local_rank, stuff)

    def broadcast_local(self, stuff: Any = None) -> Any:
        self.calls.append("broadcast_local")
        return self._node.swap(self.local_rank, stuff)[0]

    def close(self) -> None:
        return None


def group(size: int, local_size: int | None = None, timeout: float = 20.0) -> list[ThreadDist]:
    local_size = local_size or size
    assert size % local_size == 0
    world = _Exchange(size, timeout)
    nodes = [_Exchange(local_size, timeout) for _ in range(size // local_size)]
    return [ThreadDist(r, world, nodes[r // local_size], local_size) for r in range(size)]


def run_ranks(dists: list[ThreadDist], fn: Callable[[ThreadDist], T]) -> list[T | BaseException]:
    """``fn(dist)`` on every rank at once, each in its own thread: results (or raised errors)."""
    results: list[Any] = [None] * len(dists)

    def one(d: ThreadDist) -> None:
        try:
            results[d.rank] = fn(d)
        except BaseException as exc:  # handed back to the test
            results[d.rank] = exc

    threads = [threading.Thread(target=one, args=(d,)) for d in dists]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    return results


def all_ok(results: list[Any]) -> list[Any]:
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results
