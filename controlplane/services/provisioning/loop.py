"""One provisioning loop per pool with a provider (reference §2.1).

A tick: repeat any launch a crash left unanswered (same request id, so the cloud creates
nothing twice), list the cloud, read unmet demand and idle agents off the last scheduling pass,
ask the pure planner (`provisioners.tick`) for a plan, record it, then terminate and launch.
Every database write is a short transaction of its own; none is open during a cloud call,
which runs in a worker thread. Ticks run every `interval_s` and as soon as the scheduler's
demand for a pool changes, so unmet demand reaches the launch call within one tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.session import transaction
from controlplane.services.db_outage import LoopDbHealth, outage_watch
from controlplane.services.provisioning import store, waiting_work
from controlplane.services.provisioning.demand import (
    connected_agents,
    desired_instances,
    unmet_requests,
)
from controlplane.services.scheduling.pools import PassResult, Scheduling
from provisioners.base import (
    Instance,
    LaunchFailure,
    LaunchFailureKind,
    OfferLaunchResult,
    Provisioner,
)
from provisioners.config import ProviderConfig, offer_settings, pool_offers, slots_per_instance
from provisioners.factory import make_provisioner
from provisioners.instance_prices import price_instance
from provisioners.launch_errors import LaunchError, LaunchErrorSettings, visible_error
from provisioners.scale_decider import DeciderSettings
from provisioners.tick import (
    Decision,
    DecisionKind,
    ProvisioningSettings,
    TickPlan,
    TickSnapshot,
    TickState,
    plan_launch,
    plan_tick,
    record_launch,
    record_offer_attempt,
    running_cost,
)

log = logging.getLogger("controlplane.provisioning")

# Determined's provisioner sleeps 5 s between ticks.
DEFAULT_INTERVAL_S = 5.0
# Spot capacity the cloud cannot give, however long one waits at this price or in this zone.
CAPACITY_PROBLEMS = ("capacity-not-available", "price-too-low", "ZONE_RESOURCE_POOL_EXHAUSTED")

ProvisionerFactory = Callable[[ProviderConfig, str, str], Provisioner]


def _default_factory(cfg: ProviderConfig, pool: str, master_url: str) -> Provisioner:
    return make_provisioner(cfg, pool=pool, master_url=master_url)


def tls_factory(master_cert: str) -> ProvisionerFactory:
    """The default factory for a master serving HTTPS: its agents are given the certificate."""

    def factory(cfg: ProviderConfig, pool: str, master_url: str) -> Provisioner:
        return make_provisioner(cfg, pool=pool, master_url=master_url, master_cert=master_cert)

    return factory


def settings_of(cfg: ProviderConfig) -> ProvisioningSettings:
    return ProvisioningSettings(
        decider=DeciderSettings(
            min_instances=cfg.min_instances,
            max_instances=cfg.max_instances,
            max_idle_agent_period=cfg.max_idle_agent_period,
            max_agent_starting_period=cfg.max_agent_starting_period,
        ),
        launch_errors=LaunchErrorSettings(
            timeout=cfg.launch_error_timeout, retries=cfg.launch_error_retries
        ),
        slots_per_instance=slots_per_instance(cfg),
        offers=pool_offers(cfg),
        offer_settings=offer_settings(cfg),
    )


@dataclass
class PoolProvisioning:
    """One pool's loop state; the durable part lives in the provisioner tables."""

    pool: str
    config: ProviderConfig
    provisioner: Provisioner
    settings: ProvisioningSettings
    state: TickState | None = None  # None until loaded from the database
    instances: tuple[Instance, ...] = ()
    agents: Mapping[str, bool] = field(default_factory=dict)
    desired: int = 0
    launch_error: LaunchError | None = None
    last_plan: TickPlan | None = None
    last_tick_at: datetime | None = None
    last_tick_s: float | None = None
    last_list_error: str | None = None
    last_reasons: dict[str, str] = field(default_factory=dict)  # kind → last stored reason
    capacity_problem: str | None = None
    waiting_reason: str | None = None  # why the offers cannot take the work now
    hourly_cost: float = 0.0  # USD/h of the counted instances at the last tick, by offer price
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class Provisioning:
    """The provisioning loops of every pool that has a provider."""

    def __init__(
        self,
        providers: Mapping[str, ProviderConfig],
        scheduling: Scheduling,
        sessionmaker: async_sessionmaker[AsyncSession],
        clock: Callable[[], datetime],
        *,
        master_url: str,
        interval_s: float = DEFAULT_INTERVAL_S,
        factory: ProvisionerFactory = _default_factory,
    ) -> None:
        self.scheduling = scheduling
        self.sessionmaker = sessionmaker
        self.clock = clock
        self.interval_s = interval_s
        self.pools: dict[str, PoolProvisioning] = {}
        for pool, cfg in providers.items():
            url = cfg.resolve_master_url(fallback=master_url)
            self.pools[pool] = PoolProvisioning(
                pool=pool,
                config=cfg,
                provisioner=factory(cfg, pool, url),
                settings=settings_of(cfg),
            )
        self._tasks: list[asyncio.Task[None]] = []

    # --- wiring ------------------------------------------------------------------------------

    def on_pass(self, result: PassResult) -> None:
        """Called after every scheduling pass: a changed demand wakes the pool's loop now."""
        pp = self.pools.get(result.pool)
        if pp is None:
            return
        desired = desired_instances(
            result,
            slots_per_instance=pp.settings.slots_per_instance,
            max_aux=self.scheduling.pools[pp.pool].config.max_aux_containers_per_agent,
        )
        if desired != pp.desired:
            pp.desired = desired
            pp.wake.set()

    async def start(self) -> None:
        self.scheduling.pass_listeners.append(self.on_pass)
        for pp in self.pools.values():
            self._tasks.append(asyncio.create_task(self._loop(pp), name=f"provision:{pp.pool}"))

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            self.scheduling.pass_listeners.remove(self.on_pass)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _loop(self, pp: PoolProvisioning) -> None:
        health = LoopDbHealth(
            log,
            f"provisioning tick for pool {pp.pool}",
            self.clock,
            outage_watch(self.sessionmaker),
        )
        while True:
            try:
                await self.tick(pp.pool)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a cloud or database blip must not end the loop
                health.failed(exc)
            else:
                health.succeeded()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(pp.wake.wait(), timeout=self.interval_s)
            pp.wake.clear()

    # --- one tick ----------------------------------------------------------------------------

    async def tick(self, pool: str) -> TickPlan | None:
        pp = self.pools[pool]
        async with pp.lock:
            began = time.perf_counter()
            try:
                return await self._tick(pp)
            finally:
                pp.last_tick_at = self.clock()
                pp.last_tick_s = time.perf_counter() - began

    async def _tick(self, pp: PoolProvisioning) -> TickPlan | None:
        if pp.state is None:
            async with transaction(self.sessionmaker) as session:
                pp.state = TickState.from_json(await store.load_memory(session, pp.pool))
        await self._repeat_unanswered_launches(pp)
        try:
            instances = await asyncio.to_thread(pp.provisioner.list)
        except Exception as exc:  # the cloud did not answer: decide nothing on stale data
            pp.last_list_error = f"{type(exc).__name__}: {exc}"
            log.warning("pool %s: listing instances failed: %s", pp.pool, pp.last_list_error)
            return None
        pp.last_list_error = None
        pp.instances = tuple(instances)
        runner = self.scheduling.pools[pp.pool]
        last_pass = runner.last
        pp.agents = connected_agents(self.scheduling.registry.in_pool(pp.pool), last_pass)
        pp.desired = desired_instances(
            last_pass,
            slots_per_instance=pp.settings.slots_per_instance,
            max_aux=runner.config.max_aux_containers_per_agent,
        )
        seen = {a.id for a in last_pass.snapshot.agents} if last_pass is not None else set()
        if any(agent_id not in seen for agent_id in pp.agents):
            # An agent joined after the last pass: the waiting work may fit on it, which only
            # the next pass can tell. Launching for it now would start an instance too many.
            pp.desired = 0
            self.scheduling.poke(pp.pool)
        now = self.clock()
        snapshot = TickSnapshot(
            now=now,
            instances=instances,
            agents=pp.agents,
            desired_new_instances=pp.desired,
            settings=pp.settings,
            state=pp.state,
            pending_slots=unmet_requests(last_pass),
        )
        plan = plan_tick(snapshot)
        pp.last_plan = plan
        pp.waiting_reason = plan.launch_plan.waiting if plan.launch_plan is not None else None
        pp.hourly_cost = running_cost(instances, plan.scaling.classes.counted, pp.settings.offers)
        pp.launch_error = plan.launch_error
        pp.state = plan.state
        # Each instance's price (its offer's) and life, what allocations on it pay a share of
        # (docs/cost.md); stored in the tick's own transaction, one read per tick.
        priced = [
            price_instance(i, pp.settings.offers, pp.settings.slots_per_instance) for i in instances
        ]
        async with transaction(self.sessionmaker) as session:
            await store.save_memory(session, pp.pool, plan.state.to_json(), now)
            await store.add_events(session, pp.pool, self._new_events(pp, plan.decisions))
            await store.record_instance_lives(session, pp.pool, priced, now)
            if plan.prune:
                await waiting_work.fail_unschedulable(session, pp.pool, plan.prune, now)
        if plan.prune:
            self.scheduling.poke(pp.pool)
        if plan.terminate_ids:
            await asyncio.to_thread(pp.provisioner.terminate, plan.terminate_ids)
        failure: LaunchFailure | None = None
        if plan.launch > 0 and plan.launch_plan is not None and _by_offer(pp.provisioner):
            failure = await self._launch_with_failover(pp, snapshot, plan)
        elif plan.launch > 0:
            failure = await self._launch(pp, plan.launch, uuid.uuid4().hex)
        await self._handle_capacity(pp, instances, failure)
        return plan

    async def _launch_with_failover(
        self, pp: PoolProvisioning, snapshot: TickSnapshot, plan: TickPlan
    ) -> LaunchFailure | None:
        """Launch the best offer; on a capacity error mark it cold and try the next, within
        this tick, until one gives machines or none is left. One stored request per call."""
        assert plan.launch_plan is not None and pp.state is not None
        launch_plan = plan.launch_plan
        tried: set[str] = set()
        last: LaunchFailure | None = None
        requested = 0
        for _ in range(max(1, len(pp.settings.offers))):
            choices = [(c.offer, c.count) for c in launch_plan.choices if c.offer.key not in tried]
            if not choices:
                break
            request_id, count = uuid.uuid4().hex, choices[0][1]
            requested = requested or count
            now = self.clock()
            async with transaction(self.sessionmaker) as session:
                await store.record_launch(session, pp.pool, request_id, count, now)
            provisioner = pp.provisioner
            try:
                result = await asyncio.to_thread(
                    provisioner.launch_offers,  # type: ignore[attr-defined]
                    choices,
                    request_id=request_id,
                )
            except LaunchFailure as exc:
                result, last = OfferLaunchResult({}), exc
            except Exception as exc:  # the SDK's own errors: retried at the next tick
                last = LaunchFailure(LaunchFailureKind.TRANSIENT, f"{type(exc).__name__}: {exc}")
                result = OfferLaunchResult({})
            now = self.clock()
            pp.state, decisions = record_offer_attempt(pp.state, pp.settings, now, result)
            ids = result.instance_ids
            if result.errors and not ids:
                first = result.errors[0]
                last = LaunchFailure(first.kind, f"{first.offer_key}: {first.message}")
            error = None if ids else str(last or "the cloud gave no instances")
            async with transaction(self.sessionmaker) as session:
                await store.finish_launch(session, request_id, now, instance_ids=ids, error=error)
                await store.add_events(session, pp.pool, [_event(d) for d in decisions])
            tried.add(choices[0][0].key)
            tried.update(e.offer_key for e in result.errors)
            if ids:
                return await self._record_outcome(pp, requested, ids, None)
            if last is not None and last.kind not in (
                LaunchFailureKind.CAPACITY,
                LaunchFailureKind.PRICE,
                LaunchFailureKind.QUOTA,
            ):
                break  # bad config or a network blip: another offer would not help now
            launch_plan = plan_launch(snapshot, plan.scaling, pp.state.offers, launch=plan.launch)
            pp.waiting_reason = launch_plan.waiting
        if not requested:
            # Nothing was tried: no launch failed, so the sticky error's streak is left alone.
            # Work held back by cold offers still counts as capacity the cloud cannot give
            # (for fallback_pool and the jobs' note); work held back by the budget does not.
            cold = any(why.startswith("cold until") for _, why in launch_plan.left_out)
            if cold and launch_plan.waiting is not None:
                return LaunchFailure(LaunchFailureKind.CAPACITY, launch_plan.waiting)
            return None
        return await self._record_outcome(pp, requested, [], last)

    async def _record_outcome(
        self,
        pp: PoolProvisioning,
        requested: int,
        ids: list[str],
        failure: LaunchFailure | None,
    ) -> LaunchFailure | None:
        """The tick's launch outcome for the decider and the sticky launch error."""
        now = self.clock()
        assert pp.state is not None
        if not ids and failure is None:
            failure = LaunchFailure(LaunchFailureKind.CAPACITY, "the cloud gave no instances")
        pp.state, decision = record_launch(
            pp.state, pp.settings, now, requested=requested, instance_ids=ids, failure=failure
        )
        if ids:
            pp.waiting_reason = None
        pp.launch_error = visible_error(pp.state.launch_errors, pp.settings.launch_errors, now)
        async with transaction(self.sessionmaker) as session:
            await store.save_memory(session, pp.pool, pp.state.to_json(), now)
            await store.add_events(session, pp.pool, [_event(decision)])
        return failure

    async def _launch(
        self, pp: PoolProvisioning, count: int, request_id: str
    ) -> LaunchFailure | None:
        now = self.clock()
        async with transaction(self.sessionmaker) as session:
            await store.record_launch(session, pp.pool, request_id, count, now)
        return await self._call_launch(pp, count, request_id)

    async def _call_launch(
        self, pp: PoolProvisioning, count: int, request_id: str
    ) -> LaunchFailure | None:
        """The cloud call for a stored launch request, and its outcome stored."""
        failure: LaunchFailure | None = None
        ids: list[str] = []
        try:
            ids = await asyncio.to_thread(pp.provisioner.launch, count, request_id=request_id)
        except LaunchFailure as exc:
            failure = exc
        except Exception as exc:  # the SDK's own errors: retried at the next tick
            failure = LaunchFailure(LaunchFailureKind.TRANSIENT, f"{type(exc).__name__}: {exc}")
        if failure is not None:
            log.warning("pool %s: launching %d instance(s) failed: %s", pp.pool, count, failure)
        now = self.clock()
        assert pp.state is not None
        pp.state, decision = record_launch(
            pp.state, pp.settings, now, requested=count, instance_ids=ids, failure=failure
        )
        pp.launch_error = visible_error(pp.state.launch_errors, pp.settings.launch_errors, now)
        async with transaction(self.sessionmaker) as session:
            await store.finish_launch(
                session,
                request_id,
                now,
                instance_ids=ids,
                error=str(failure) if failure is not None else None,
            )
            await store.save_memory(session, pp.pool, pp.state.to_json(), now)
            await store.add_events(session, pp.pool, [_event(decision)])
        return failure

    async def _repeat_unanswered_launches(self, pp: PoolProvisioning) -> None:
        """Launch calls stored but never answered (the master died in between): repeat them
        with the same request id, which the cloud deduplicates."""
        async with transaction(self.sessionmaker) as session:
            pending = await store.pending_launches(session, pp.pool)
        for launch in pending:
            log.info("pool %s: repeating unanswered launch %s", pp.pool, launch.request_id)
            await self._call_launch(pp, launch.count, launch.request_id)

    def _new_events(
        self, pp: PoolProvisioning, decisions: tuple[Decision, ...]
    ) -> list[store.EventRow]:
        """Decisions worth a row: every action, and a standing condition when it changes."""
        out = []
        standing = {
            DecisionKind.AT_MAXIMUM,
            DecisionKind.INSTANCE_PROBLEM,
            DecisionKind.LAUNCH_SKIPPED,
            DecisionKind.WAITING_FOR_OFFER,
        }
        for d in decisions:
            if d.kind in standing:
                if pp.last_reasons.get(d.kind) == d.reason:
                    continue
                pp.last_reasons[d.kind] = d.reason
            out.append(_event(d))
        kinds = {d.kind for d in decisions}
        for kind in standing - kinds:
            pp.last_reasons.pop(kind, None)
        return out

    async def _handle_capacity(
        self, pp: PoolProvisioning, instances: list[Instance], failure: LaunchFailure | None
    ) -> None:
        """Spot capacity the cloud cannot give: tell the waiting jobs, and hand their work to
        the fallback pool when the config names one."""
        problem = None
        if failure is not None and failure.capacity_unavailable:
            problem = str(failure)
        stuck = [i for i in instances if i.problem and i.problem.startswith(CAPACITY_PROBLEMS)]
        if problem is None and stuck:
            problem = stuck[0].problem
        previous, pp.capacity_problem = pp.capacity_problem, problem
        runner = self.scheduling.pools[pp.pool]
        if problem is not None:
            runner.provider_note = f"pool {pp.pool!r} cannot get capacity: {problem}"
            if pp.waiting_reason:
                runner.provider_note += f" ({pp.waiting_reason})"
        elif pp.waiting_reason is not None:
            runner.provider_note = f"pool {pp.pool!r} waits for an offer: {pp.waiting_reason}"
        elif pp.launch_error is not None:
            runner.provider_note = f"pool {pp.pool!r} cannot launch: {pp.launch_error.message}"
        else:
            runner.provider_note = None
        if problem is None:
            return
        waiting = unmet_requests(runner.last)
        fallback = pp.config.fallback_pool
        now = self.clock()
        async with transaction(self.sessionmaker) as session:
            if fallback is not None and waiting:
                moved = await waiting_work.move_to_pool(
                    session, pp.pool, fallback, list(waiting), problem, now
                )
                if moved:
                    reason = f"{problem}; moved {len(moved)} waiting job(s) to pool {fallback!r}"
                    await store.add_events(
                        session, pp.pool, [store.EventRow(now, "fallback", reason, tuple(moved))]
                    )
            elif problem != previous and waiting:
                await waiting_work.tell_waiting(
                    session, list(waiting), f"pool {pp.pool!r} cannot get capacity: {problem}", now
                )
        if fallback is not None and waiting:
            # The spot requests that cannot be fulfilled stand for work that left the pool.
            if stuck:
                await asyncio.to_thread(pp.provisioner.terminate, [i.id for i in stuck])
            self.scheduling.poke(fallback)
            self.scheduling.poke(pp.pool)


def _by_offer(provisioner: Provisioner) -> bool:
    """Whether the provisioner launches by offer (AWS, GCP); test fakes may launch by count."""
    return callable(getattr(provisioner, "launch_offers", None))


def _event(decision: Decision) -> store.EventRow:
    return store.EventRow(decision.at, decision.kind.value, decision.message, decision.instance_ids)


def master_url_fallback(host: str, port: int, *, tls: bool = False) -> str:
    """The address dynamic agents dial when the provider sets no master_url."""
    import socket

    if host in ("0.0.0.0", "::", ""):
        with contextlib.suppress(OSError):
            host = socket.gethostbyname(socket.gethostname())
    return f"{'https' if tls else 'http'}://{host}:{port}"
