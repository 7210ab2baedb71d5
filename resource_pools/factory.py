"""Build the scheduler a pool's config names."""

from __future__ import annotations

from typing import Protocol

from resource_pools.config_scheduler import SchedulerConfig, SchedulerType
from resource_pools.fair_share import FairShareScheduler
from resource_pools.priority import PriorityScheduler
from resource_pools.round_robin import RoundRobinScheduler
from resource_pools.types import PoolSnapshot, SchedulingPlan


class Scheduler(Protocol):
    def schedule(self, snapshot: PoolSnapshot) -> SchedulingPlan: ...


def make_scheduler(config: SchedulerConfig) -> Scheduler:
    """The scheduler for ``config`` (the pool's effective scheduler block)."""
    if config.type is SchedulerType.PRIORITY:
        return PriorityScheduler(
            preemption=config.preemption,
            default_priority=config.default_priority,
            fitting_policy=config.fitting_policy,
            allow_heterogeneous=config.allow_heterogeneous_fits,
        )
    if config.type is SchedulerType.FAIR_SHARE:
        return FairShareScheduler(
            fitting_policy=config.fitting_policy,
            allow_heterogeneous=config.allow_heterogeneous_fits,
        )
    return RoundRobinScheduler(
        fitting_policy=config.fitting_policy,
        allow_heterogeneous=config.allow_heterogeneous_fits,
    )
