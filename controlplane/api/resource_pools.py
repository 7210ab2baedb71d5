"""Resource pools as users see them: config, agents, slots, the queue and the last pass."""

from __future__ import annotations

from typing import Annotated

from litestar import get
from litestar.params import FromQuery, Parameter, QueryParameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Limit, Offset, clamp_limit
from controlplane.api.schemas.common import INT32_MAX, Pagination
from controlplane.api.schemas.resource_pools import (
    FittingPolicy,
    GetResourcePoolsResponse,
    PoolDetail,
    PoolProvisioner,
    PoolType,
    PrioritySchedulerDetail,
    ProvisionedInstance,
    ProvisionerOffer,
    QueueStats,
    ResourcePool,
    ScalingDecision,
    SchedulerType,
)
from controlplane.domain.errors import NotFound
from controlplane.services import workspace_pools
from controlplane.services.job_queue import queue_stats
from controlplane.services.provisioning import store as provisioning_store
from controlplane.services.scheduling.pools import PoolRunner, Scheduling
from controlplane.services.workspaces import get_workspace
from resource_pools.config_scheduler import SchedulerType as ConfigSchedulerType

_SCHEDULER = {
    ConfigSchedulerType.PRIORITY: SchedulerType.PRIORITY,
    ConfigSchedulerType.FAIR_SHARE: SchedulerType.FAIR_SHARE,
    ConfigSchedulerType.ROUND_ROBIN: SchedulerType.ROUND_ROBIN,
}


def _iso(value: object) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if hasattr(value, "isoformat") else None


def pool_out(scheduling: Scheduling, runner: PoolRunner, cluster_name: str) -> ResourcePool:
    cfg = runner.config
    sched = runner.scheduler_config
    rm = scheduling.resources.resource_manager
    agents = scheduling.registry.in_pool(cfg.pool_name)
    snapshot_agents = runner.last.snapshot.agents if runner.last else ()
    used = sum(a.used_slots for a in snapshot_agents)
    aux_running = sum(a.zero_slot_running for a in snapshot_agents)
    provider = cfg.provider or {}
    kind = PoolType.STATIC
    if "aws" in provider or provider.get("type") == "aws":
        kind = PoolType.AWS
    elif "gcp" in provider or provider.get("type") == "gcp":
        kind = PoolType.GCP
    slot_types = {d.type.value for a in agents for d in a.devices}
    slot_type = "TYPE_CUDA" if "cuda" in slot_types else "TYPE_CPU"
    last = runner.last
    queued, scheduled = queue_stats(last) if last else (0, 0)
    queued_jobs: set[str] = set()
    running_jobs: set[str] = set()
    reasons: dict[str, int] = {}
    if last is not None:
        by_id = {r.allocation_id: r for r in last.snapshot.pending}
        started = {s.allocation_id for s in last.plan.start}
        for r in last.snapshot.running:
            running_jobs.add(r.job_id)
        for s in started:
            running_jobs.add(by_id[s].job_id)
        for w in last.plan.waiting:
            queued_jobs.add(by_id[w.allocation_id].job_id)
            reasons[w.reason.value] = reasons.get(w.reason.value, 0) + 1
    return ResourcePool(
        name=cfg.pool_name,
        description=cfg.description,
        type=kind,
        num_agents=len(agents),
        slots_available=sum(a.slots for a in agents if a.schedulable),
        slots_used=used,
        slot_type=slot_type,
        aux_container_capacity=cfg.max_aux_containers_per_agent * len(agents),
        aux_containers_running=aux_running,
        default_compute_pool=cfg.pool_name == rm.default_compute_resource_pool,
        default_aux_pool=cfg.pool_name == rm.default_aux_resource_pool,
        preemptible=sched.is_preemptible,
        min_agents=int(provider.get("min_instances", 0) or 0),
        max_agents=int(provider.get("max_instances", 0) or 0),
        aux_container_capacity_per_agent=cfg.max_aux_containers_per_agent,
        scheduler_type=_SCHEDULER[sched.type],
        scheduler_fitting_policy=(
            FittingPolicy.WORST if sched.fitting_policy.value == "worst" else FittingPolicy.BEST
        ),
        location="",
        image_id="",
        instance_type="",
        master_url="",
        master_cert_name="",
        startup_script="",
        container_startup_script="",
        agent_docker_network="",
        agent_docker_runtime="",
        agent_docker_image="",
        agent_fluent_image="",
        max_idle_agent_period=0.0,
        max_agent_starting_period=0.0,
        details=PoolDetail(
            priority_scheduler=PrioritySchedulerDetail(
                preemption=sched.preemption, default_priority=sched.default_priority
            )
            if sched.type is ConfigSchedulerType.PRIORITY
            else None
        ),
        stats=QueueStats(queued_count=queued, scheduled_count=scheduled),
        cluster_name=cluster_name,
        queued_jobs=len(queued_jobs - running_jobs),
        running_jobs=len(running_jobs),
        last_pass_at=_iso(last.at) if last else None,
        last_pass_ms=round(last.seconds * 1000, 3) if last else None,
        wait_reasons=reasons,
    )


@get("/api/v1/resource-pools")
async def list_resource_pools(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    offset: Offset = 0,
    limit: Limit = 0,
    unbound: FromQuery[bool | None] = None,
    workspace_id: Annotated[
        int | None, QueryParameter(name="workspaceId", ge=1, le=INT32_MAX)
    ] = None,
) -> GetResourcePoolsResponse:
    """Every pool; `unbound=true`: only pools bound to no workspace (Determined's filter);
    `workspaceId` (Resolute's): only the pools that workspace may use."""
    names = sorted(ctx.scheduling.pools)
    if unbound:
        bound = await workspace_pools.pools_with_bindings(db)
        names = [n for n in names if n not in bound]
    if workspace_id is not None:
        await get_workspace(db, workspace_id)
        names = await workspace_pools.available_pools(db, workspace_id, names)
    runners = [ctx.scheduling.pools[name] for name in names]
    page = clamp_limit(limit, default=-1)
    chunk = runners[offset:] if page < 0 else runners[offset : offset + page]
    for runner in chunk:  # their queue counts include tasks that arrived since the last pass
        await ctx.scheduling.current(runner.name)
    return GetResourcePoolsResponse(
        resource_pools=[pool_out(ctx.scheduling, r, ctx.cluster_name) for r in chunk],
        pagination=Pagination.of(offset, page, len(chunk), len(runners)),
    )


PoolName = Annotated[str, Parameter(min_length=1, max_length=255)]
DECISIONS_SHOWN = 50


@get("/api/v1/resource-pools/{pool_name:str}/provisioner")
async def get_pool_provisioner(
    db: Db, principal: Caller, ctx: Ctx, pool_name: PoolName
) -> PoolProvisioner:
    """Resolute addition: a provider pool's instances, recent scaling decisions and errors."""
    if pool_name not in ctx.scheduling.pools:
        raise NotFound(f"resource pool {pool_name!r} not found")
    pp = ctx.provisioning.pools.get(pool_name) if ctx.provisioning is not None else None
    if pp is None:
        raise NotFound(f"resource pool {pool_name!r} has no provider (a static pool)")
    now = ctx.clock()
    events = await provisioning_store.recent_events(db, pool_name, DECISIONS_SHOWN)
    instances = [
        ProvisionedInstance(
            id=i.id,
            agent_name=i.agent_name,
            state=i.state.value,
            launch_time=_iso(i.launch_time) or "",
            age_seconds=round(max(0.0, (now - i.launch_time).total_seconds()), 1),
            spot=i.spot,
            agent_connected=i.agent_name in pp.agents,
            agent_idle=pp.agents.get(i.agent_name),
            problem=i.problem,
        )
        for i in sorted(pp.instances, key=lambda i: (i.launch_time, i.id))
    ]
    error = pp.launch_error
    cold = pp.state.offers.cold if pp.state is not None else {}
    offers = [
        ProvisionerOffer(
            key=o.key,
            instance_type=o.instance_type,
            location=o.location,
            spot=o.spot,
            slots=o.slots,
            price_per_hour=o.price_per_hour,
            fallback=o.fallback,
            cold_until=_iso(cold[o.key].cold_until)
            if o.key in cold and cold[o.key].cold_until > now
            else None,
            failures=cold[o.key].failures if o.key in cold else 0,
            last_error=cold[o.key].reason if o.key in cold else None,
        )
        for o in pp.settings.offers
    ]
    return PoolProvisioner(
        pool=pool_name,
        provider=pp.config.type,
        spot=pp.config.is_spot,
        slots_per_instance=pp.settings.slots_per_instance,
        min_instances=pp.config.min_instances,
        max_instances=pp.config.max_instances,
        desired_new_instances=pp.desired,
        instances=instances,
        decisions=[
            ScalingDecision(
                at=_iso(e.at) or "", kind=e.kind, reason=e.reason, instance_ids=list(e.instance_ids)
            )
            for e in events
        ],
        launch_error=error.message if error is not None else None,
        launch_error_until=_iso(error.visible_until) if error is not None else None,
        fallback_pool=pp.config.fallback_pool,
        last_tick_at=_iso(pp.last_tick_at),
        last_tick_ms=round(pp.last_tick_s * 1000, 3) if pp.last_tick_s is not None else None,
        last_list_error=pp.last_list_error,
        offers=offers,
        waiting_reason=pp.waiting_reason,
        hourly_cost=round(pp.hourly_cost, 4) if pp.settings.offers else None,
        max_hourly_cost=pp.config.max_hourly_cost,
    )


ROUTES = [list_resource_pools, get_pool_provisioner]
