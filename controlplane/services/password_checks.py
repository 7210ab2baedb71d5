"""Where the master runs password hashes: a few worker threads, clean logins first.

A scrypt check costs tens of milliseconds of CPU. Under a burst of guesses (each new address's
free attempts are checked like any login) the checks would queue first come, first served, and a
user logging in would wait behind hundreds of guesses. Here every check carries a rank, the
attempts already counted against its user name and address (0 for a user with a clean record from
a clean address); waiting checks start lowest rank first, and when there is more than one worker
one of them is kept for rank 0, so guesses never hold every worker.

Runs on the event loop (no locks); the hashing itself runs in `asyncio.to_thread` (scrypt
releases the GIL).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import os
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class PasswordChecks:
    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers if workers is not None else _usable_cpus())
        # Checks of rank > 0 may use every worker but one (when there are two or more).
        self.ranked_limit = self.workers - 1 if self.workers > 1 else 1
        self.busy = 0
        self.busy_ranked = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        return sum(1 for _, _, future in self._waiting if not future.done())

    async def run(self, rank: int, check: Callable[..., T], *args: object) -> T:
        """`check(*args)` in a worker thread once a worker is free for `rank`."""
        await self._slot(rank)
        try:
            return await asyncio.to_thread(check, *args)
        finally:
            self._release(rank)

    def _can_start(self, rank: int) -> bool:
        return self.busy < self.workers and (rank == 0 or self.busy_ranked < self.ranked_limit)

    def _take(self, rank: int) -> None:
        self.busy += 1
        self.busy_ranked += rank > 0

    async def _slot(self, rank: int) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (rank, next(self._order), future))
        self._dispatch()
        if future.done():
            return
        try:
            await future  # _dispatch took the worker for us
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release(rank)  # handed a worker, then cancelled: hand it on
            raise

    def _release(self, rank: int) -> None:
        self.busy -= 1
        self.busy_ranked -= rank > 0
        self._dispatch()

    def _dispatch(self) -> None:
        while self._waiting:
            rank, _, future = self._waiting[0]
            if future.done():  # its request went away
                heapq.heappop(self._waiting)
                continue
            if not self._can_start(rank):
                return  # the lowest rank cannot start, so no other can
            heapq.heappop(self._waiting)
            self._take(rank)
            future.set_result(None)


def _usable_cpus() -> int:
    """The CPUs this process may run on (a container's share, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
