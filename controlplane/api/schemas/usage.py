"""Historical usage and cost on the wire.

Determined 0.38.1's v1ResourceAllocationAggregatedResponse and v1ResourceAllocationRawResponse
(its `seconds` are slot-seconds), each entry with our cost beside Determined's fields (the real
client reads the fields it knows and ignores the rest). Costs are USD; an allocation's cost is
its share of the machines it ran on (controlplane/domain/cost.py).
"""

from __future__ import annotations

from pydantic import Field

from controlplane.api.schemas.common import Wire


class ResourceAllocationAggregatedEntry(Wire):
    period_start: str
    period: str
    seconds: float
    by_username: dict[str, float]
    by_experiment_label: dict[str, float]
    by_resource_pool: dict[str, float]
    # ours
    by_workspace: dict[str, float] = Field(default_factory=dict)
    unpriced_seconds: float = 0.0
    cost: float = 0.0
    cost_by_username: dict[str, float] = Field(default_factory=dict)
    cost_by_experiment_label: dict[str, float] = Field(default_factory=dict)
    cost_by_resource_pool: dict[str, float] = Field(default_factory=dict)
    cost_by_workspace: dict[str, float] = Field(default_factory=dict)


class ResourceAllocationAggregatedResponse(Wire):
    resource_entries: list[ResourceAllocationAggregatedEntry]


class ResourceAllocationRawEntry(Wire):
    kind: str
    start_time: str | None = None
    end_time: str | None = None
    experiment_id: int | None = None
    username: str | None = None
    user_id: int | None = None
    labels: list[str] | None = None
    seconds: float = 0.0
    slots: int = 0
    # ours
    allocation_id: str | None = None
    trial_id: int | None = None
    resource_pool: str | None = None
    workspace: str | None = None
    instance_type: str | None = None
    price_per_hour: float | None = None
    unpriced_seconds: float = 0.0
    cost: float = 0.0


class ResourceAllocationRawResponse(Wire):
    resource_entries: list[ResourceAllocationRawEntry]


class CostSummary(Wire):
    """What a set of allocations cost: USD, slot-hours used, and how many of those ran on
    machines without a known price (static agents, unpriced types): not in `cost`."""

    cost: float
    slot_hours: float
    unpriced_slot_hours: float
    currency: str = "USD"


class AllocationCost(Wire):
    allocation_id: str
    trial_id: int | None = None
    resource_pool: str
    slots: int
    start_time: str
    end_time: str | None = None
    cost: CostSummary


class ExperimentCostResponse(Wire):
    experiment_id: int
    total: CostSummary
    by_trial: dict[str, CostSummary]
    by_resource_pool: dict[str, CostSummary]


class TrialCostResponse(Wire):
    trial_id: int
    experiment_id: int
    total: CostSummary
    allocations: list[AllocationCost]


class CostByGroupResponse(Wire):
    group_by: str
    timestamp_after: str
    timestamp_before: str
    total: CostSummary
    groups: dict[str, CostSummary]
    # What each pool's provisioned machines cost in the window, busy or idle: minus the pool's
    # allocations' shares, what its idle time cost.
    instances_by_pool: dict[str, CostSummary] = Field(default_factory=dict)
