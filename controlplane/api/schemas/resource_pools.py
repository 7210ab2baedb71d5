"""Resource pools on the wire: v1ResourcePool (all 33 fields the real client requires)."""

from __future__ import annotations

from enum import StrEnum

from controlplane.api.schemas.common import Pagination, Wire


class SchedulerType(StrEnum):
    UNSPECIFIED = "SCHEDULER_TYPE_UNSPECIFIED"
    PRIORITY = "SCHEDULER_TYPE_PRIORITY"
    FAIR_SHARE = "SCHEDULER_TYPE_FAIR_SHARE"
    ROUND_ROBIN = "SCHEDULER_TYPE_ROUND_ROBIN"
    KUBERNETES = "SCHEDULER_TYPE_KUBERNETES"
    SLURM = "SCHEDULER_TYPE_SLURM"
    PBS = "SCHEDULER_TYPE_PBS"


class FittingPolicy(StrEnum):
    UNSPECIFIED = "FITTING_POLICY_UNSPECIFIED"
    BEST = "FITTING_POLICY_BEST"
    WORST = "FITTING_POLICY_WORST"
    KUBERNETES = "FITTING_POLICY_KUBERNETES"
    SLURM = "FITTING_POLICY_SLURM"
    PBS = "FITTING_POLICY_PBS"


class PoolType(StrEnum):
    UNSPECIFIED = "RESOURCE_POOL_TYPE_UNSPECIFIED"
    AWS = "RESOURCE_POOL_TYPE_AWS"
    GCP = "RESOURCE_POOL_TYPE_GCP"
    STATIC = "RESOURCE_POOL_TYPE_STATIC"
    K8S = "RESOURCE_POOL_TYPE_K8S"


class PrioritySchedulerDetail(Wire):
    preemption: bool
    default_priority: int


class PoolDetail(Wire):
    priority_scheduler: PrioritySchedulerDetail | None = None


class QueueStats(Wire):
    queued_count: int
    scheduled_count: int


class ResourcePool(Wire):
    name: str
    description: str
    type: PoolType
    num_agents: int
    slots_available: int
    slots_used: int
    slot_type: str
    aux_container_capacity: int
    aux_containers_running: int
    default_compute_pool: bool
    default_aux_pool: bool
    preemptible: bool
    min_agents: int
    max_agents: int
    slots_per_agent: int | None = None
    aux_container_capacity_per_agent: int
    scheduler_type: SchedulerType
    scheduler_fitting_policy: FittingPolicy
    location: str
    image_id: str
    instance_type: str
    master_url: str
    master_cert_name: str
    startup_script: str
    container_startup_script: str
    agent_docker_network: str
    agent_docker_runtime: str
    agent_docker_image: str
    agent_fluent_image: str
    max_idle_agent_period: float
    max_agent_starting_period: float
    details: PoolDetail
    accelerator: str | None = None
    stats: QueueStats | None = None
    resource_manager_metadata: dict[str, str] = {}
    cluster_name: str
    # Resolute additions: the queue, and why the last pass left jobs waiting.
    queued_jobs: int = 0
    running_jobs: int = 0
    last_pass_at: str | None = None
    last_pass_ms: float | None = None
    wait_reasons: dict[str, int] = {}


class GetResourcePoolsResponse(Wire):
    resource_pools: list[ResourcePool]
    pagination: Pagination


# --- Resolute additions: the provisioner of a pool with a provider ----------------------------


class ProvisionedInstance(Wire):
    id: str
    agent_name: str
    state: str
    launch_time: str
    age_seconds: float
    spot: bool = False
    agent_connected: bool = False
    agent_idle: bool | None = None
    problem: str | None = None


class ProvisionerOffer(Wire):
    """Resolute addition: one offer of the pool (instance type x subnet/zone x market), its
    price and, while it is cold after a capacity error, until when and why."""

    key: str
    instance_type: str
    location: str
    spot: bool
    slots: int
    price_per_hour: float
    fallback: bool = False
    cold_until: str | None = None
    failures: int = 0
    last_error: str | None = None


class ScalingDecision(Wire):
    at: str
    kind: str  # launch | terminate | launch_error | spot_problem | fallback
    reason: str
    instance_ids: list[str] = []


class PoolProvisioner(Wire):
    pool: str
    provider: str  # aws | gcp
    spot: bool
    slots_per_instance: int
    min_instances: int
    max_instances: int
    desired_new_instances: int
    instances: list[ProvisionedInstance]
    decisions: list[ScalingDecision]
    launch_error: str | None = None
    launch_error_until: str | None = None
    fallback_pool: str | None = None
    last_tick_at: str | None = None
    last_tick_ms: float | None = None
    last_list_error: str | None = None
    offers: list[ProvisionerOffer] = []
    waiting_reason: str | None = None
    hourly_cost: float | None = None
    max_hourly_cost: float | None = None
