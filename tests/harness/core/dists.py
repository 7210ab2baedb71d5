"""Several ranks of one trial as threads: a DistributedContext whose broadcast is real.

Only ``broadcast`` (the one collective preemption and the searcher use) is implemented: the chief
puts its value in every worker's queue, a worker takes the next one from its own.
"""

from __future__ import annotations

import queue
from typing import Any

from harness.core import DistributedContext


class Group:
    def __init__(self, size: int) -> None:
        self.queues: list[queue.Queue[Any]] = [queue.Queue() for _ in range(size)]
        self.size = size
        self.broadcasts = 0

    def rank(self, rank: int) -> ThreadDist:
        return ThreadDist(self, rank)


class ThreadDist(DistributedContext):
    def __init__(self, group: Group, rank: int) -> None:
        # Not the base constructor: with size > 1 it would start torch.distributed.
        self.rank = self.local_rank = rank
        self.size = self.local_size = group.size
        self.cross_rank, self.cross_size = 0, 1
        self._group = group

    def broadcast(self, stuff: Any) -> Any:
        if self.rank == 0:
            self._group.broadcasts += 1
            for q in self._group.queues[1:]:
                q.put(stuff)
            return stuff
        return self._group.queues[self.rank].get(timeout=10)

    def close(self) -> None:
        return None
