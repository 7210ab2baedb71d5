"""What a service asks of the master's resource pools when work is submitted or moved: which pool
it runs in, whether it could ever fit there, and the pool's default priority.

`controlplane.services.scheduling.pools.Scheduling` answers it; the services that submit work
(commands, experiments, the job queue) take this protocol instead, so that they need not import
the scheduling package, which calls back into several of them.
"""

from __future__ import annotations

from typing import Protocol


class PoolCatalog(Protocol):
    def resolve_pool(self, requested: str | None, slots: int) -> str:
        """The pool a job runs in: the one it names, else the default compute or aux pool."""
        ...

    def check_fits(self, pool: str, slots: int) -> None:
        """Raises when no agent of the pool could ever hold `slots` slots."""
        ...

    def default_priority(self, pool: str) -> int: ...
