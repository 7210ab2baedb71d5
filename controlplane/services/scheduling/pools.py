"""One scheduling loop per resource pool, and what submission asks of the pools.

A pool runs a pass when something changed (`poke`) and at least every `interval` seconds (500 ms,
as Determined's scheduler tick); a new task the pool has no room for waits for the tick
(arrivals.py). A pass: load the snapshot, give up on agents past their
reconnect wait, ask the pool's pure scheduler for a plan, apply it in one transaction, then send
the container start messages and the kills that are due. The last pass is kept so the job queue
API can show positions and why jobs wait.

The pool keeps its queue as the last pass left it (as Determined's resource manager keeps its
own). A pass reads it again from the database when anything but a command's end poked the pool
since, or when the last read is an interval old; otherwise it reads only the running
allocations. A command's end frees slots without touching the queue, and with a long queue it
is what pokes most: a pass per freed slot that read the whole queue made a burst cost the square
of its length. A queued task that left meanwhile unannounced is still caught: `apply_plan`
re-checks each task it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from agent.protocol import SignalContainer
from controlplane.db.session import transaction
from controlplane.domain.container_ids import container_id
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.task_user import DefaultTaskUser
from controlplane.services.db_outage import LoopDbHealth, outage_watch
from controlplane.services.reschedule import Pokes, take_reschedule
from controlplane.services.scheduling import kills
from controlplane.services.scheduling.agent_link import fail_agent_work
from controlplane.services.scheduling.agent_loss import agents_past_reconnect_wait
from controlplane.services.scheduling.apply import Applied, apply_plan
from controlplane.services.scheduling.arrivals import idle_slots_after, pass_now
from controlplane.services.scheduling.kills import KillCandidates
from controlplane.services.scheduling.registry import AgentRegistry
from controlplane.services.scheduling.snapshot import (
    PoolRows,
    Queue,
    RequestMemo,
    build_snapshot,
    load_pool_rows,
)
from provisioners.config import (
    ProviderConfig,
    max_pool_slots,
    parse_pool_providers,
    slots_per_instance,
)
from resource_pools.config import ResourcePoolConfig, ResourcesConfig
from resource_pools.config_scheduler import SchedulerConfig
from resource_pools.factory import Scheduler, make_scheduler
from resource_pools.types import PoolSnapshot, SchedulingPlan

log = logging.getLogger("controlplane.scheduling")

# Up to this many requests, allocations and agents together a pass plans on the event loop
# (well under a millisecond); beyond, on a thread.
INLINE_PASS_SIZE = 200

# Determined's kill cooldown: a SIGKILL is repeated at most this often until the container ends.
KILL_COOLDOWN_S = 15.0


@dataclass(frozen=True)
class PassResult:
    pool: str
    at: datetime
    snapshot: PoolSnapshot
    plan: SchedulingPlan
    applied: Applied
    seconds: float


class PoolRunner:
    def __init__(self, config: ResourcePoolConfig, scheduler_config: SchedulerConfig) -> None:
        self.config = config
        self.scheduler_config = scheduler_config
        self.scheduler: Scheduler = make_scheduler(scheduler_config)
        self.last: PassResult | None = None
        self.wake = asyncio.Event()
        self.lock = asyncio.Lock()
        self.kills_sent: dict[str, datetime] = {}
        # Set by the pool's provisioner while its cloud cannot give capacity: why work waits.
        self.provider_note: str | None = None
        self.requests = RequestMemo()  # the queue's requests as the last pass built them
        self.idle_slots: int | None = None  # what the last pass left idle; None before one
        self.arrived = False  # tasks came in that no pass has seen yet (they wait for the tick)
        self.queue: Queue | None = None  # as the last pass left it; None: read it again
        self.queue_read_at = 0.0  # time.monotonic() of that read
        self.stale = True  # poked since the last read by something that may change the queue

    def cached_queue(self, at: float, max_age_s: float) -> Queue | None:
        """The queue a pass may plan on without reading it again; None: read it."""
        if self.stale or self.queue is None or at - self.queue_read_at >= max_age_s:
            return None
        return self.queue

    @property
    def name(self) -> str:
        return self.config.pool_name


class Scheduling:
    """The master's resource pools: their loops, the agent registry, submission checks."""

    def __init__(
        self,
        resources: ResourcesConfig,
        sessionmaker: async_sessionmaker[AsyncSession],
        clock: Callable[[], datetime],
        *,
        registry: AgentRegistry | None = None,
        interval_s: float = 0.5,
        launch_error: bool = True,
        heartbeat_interval_s: float = 5.0,
        liveness_timeout_s: float = 20.0,
        kill_cooldown_s: float = KILL_COOLDOWN_S,
        providers: Mapping[str, ProviderConfig] | None = None,
        default_task_user: DefaultTaskUser = DefaultTaskUser(),
    ) -> None:
        self.resources = resources
        # What the tasks of users with no linked agent user run as (security.default_task_user).
        self.default_task_user = default_task_user
        # The parsed provider of each provisioned pool (the master config's, when given).
        self.providers = dict(parse_pool_providers(resources) if providers is None else providers)
        self.sessionmaker = sessionmaker
        self.clock = clock
        self.registry = registry or AgentRegistry()
        self.interval_s = interval_s
        self.launch_error = launch_error
        # Sent to every agent in MasterSetAgentOptions; the agent socket drops a connection
        # that stays silent for liveness_timeout_s.
        self.heartbeat_interval_s = heartbeat_interval_s
        self.liveness_timeout_s = liveness_timeout_s
        self.kill_cooldown = timedelta(seconds=kill_cooldown_s)
        # Agents that held allocations before a restart get their reconnect wait from here.
        self.started_at = clock()
        self.pools = {
            p.pool_name: PoolRunner(p, resources.effective_scheduler(p))
            for p in resources.resource_pools
        }
        self._tasks: list[asyncio.Task[None]] = []
        # Told of every pass (the provisioners read unmet demand off it); must not block.
        self.pass_listeners: list[Callable[[PassResult], None]] = []

    # --- submission --------------------------------------------------------------------------

    def resolve_pool(self, requested: str | None, slots: int) -> str:
        """The pool a job runs in: the one it names, else the default compute or aux pool."""
        rm = self.resources.resource_manager
        name = requested or (
            rm.default_compute_resource_pool if slots > 0 else rm.default_aux_resource_pool
        )
        if not name:
            raise InvalidArgument(
                "no resource pool given and the cluster has no default pool "
                "(set resources.resource_pool)"
            )
        if name not in self.pools:
            known = ", ".join(sorted(self.pools))
            raise InvalidArgument(f"resource pool {name!r} does not exist (pools: {known})")
        return name

    def capacity(self, pool: str) -> int | None:
        """Slots the pool can ever hold; None when unknown (a static pool with no agents yet).

        Provider pool: max_instances times slots per instance, whatever runs now (Determined's
        capacity check). Static pool: the slots of its registered agents, counted while they are
        within their reconnect wait.
        """
        provider = self.providers.get(pool)
        if provider is not None:
            return max_pool_slots(provider)
        if self.pools[pool].config.provider is not None:
            return None  # a provider block no one parsed for us: nothing to go on
        agents = self.registry.in_pool(pool)
        if not agents:
            return None
        return sum(a.slots for a in agents)

    def check_fits(self, pool: str, slots: int) -> None:
        if not self.launch_error:
            return
        capacity = self.capacity(pool)
        if capacity is None or slots <= capacity:
            return
        provider = self.providers.get(pool)
        if provider is not None:
            held = (
                f"can have at most {capacity} (max_instances {provider.max_instances} × "
                f"{slots_per_instance(provider)} slots per instance)"
            )
        else:
            held = f"has {capacity} in all"
        raise InvalidArgument(
            f"slots requested exceeds cluster capacity: {slots} slots requested, resource "
            f"pool {pool!r} {held}"
        )

    def default_priority(self, pool: str) -> int:
        return self.pools[pool].scheduler_config.default_priority

    def reconnect_wait(self, pool: str) -> timedelta:
        return self.pools[pool].config.agent_reconnect_wait

    # --- the loops ---------------------------------------------------------------------------

    def poke(
        self, pool: str | None = None, *, arrival_slots: int | None = None, freed: bool = False
    ) -> None:
        """Run a pass soon: for `pool`, or for every pool when None. A new task of
        ``arrival_slots`` slots that the last pass left no room for waits for the tick
        (arrivals.py). ``freed``: only a command's slots were freed, so the pass may plan on
        the queue the last one read."""
        for name, runner in self.pools.items():
            if pool is not None and name != pool:
                continue
            if not freed:
                runner.stale = True
            if freed or arrival_slots is None or pass_now(runner.idle_slots, arrival_slots):
                runner.wake.set()
            else:
                runner.arrived = True

    def deliver(self, pokes: Pokes) -> None:
        """Poke the pools as a committed session asked (services/reschedule.py)."""
        for pool in pokes.full:
            self.poke(pool)
        for pool, slots in pokes.arrivals.items():
            self.poke(pool, arrival_slots=slots)
        for pool in pokes.freed:
            self.poke(pool, freed=True)

    async def current(self, pool: str) -> PassResult | None:
        """The pool's last pass, run first when tasks have arrived since: who reads the queue
        (`det job list`, the pools' stats) sees a task the moment its submission answered."""
        runner = self.pools[pool]
        if runner.arrived:
            try:
                await self.run_pass(pool)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a database blip: the last pass is still an answer
                log.warning("pool %s: no fresh pass for a read of its queue: %s", pool, exc)
        else:
            async with runner.lock:  # a pass under way may be the one that read them
                pass
        return runner.last

    async def start(self) -> None:
        self.started_at = self.clock()
        for runner in self.pools.values():
            self._tasks.append(asyncio.create_task(self._loop(runner), name=f"pool:{runner.name}"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _loop(self, runner: PoolRunner) -> None:
        health = LoopDbHealth(
            log,
            f"scheduling pass for pool {runner.name}",
            self.clock,
            outage_watch(self.sessionmaker),
        )
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(runner.wake.wait(), timeout=self.interval_s)
            runner.wake.clear()
            try:
                await self.run_pass(runner.name)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a database blip must not end the loop; the next retries
                health.failed(exc)  # one line when the database goes, not a traceback a pass
                await asyncio.sleep(self.interval_s)
            else:
                health.succeeded()

    async def run_pass(self, pool: str) -> PassResult:
        runner = self.pools[pool]
        async with runner.lock:
            runner.arrived = False  # this pass reads them; a later arrival sets it again
            now = self.clock()
            began = time.perf_counter()
            queue = runner.cached_queue(time.monotonic(), self.interval_s)
            # A poke from here on is after this read: the next pass reads the queue again.
            runner.stale, runner.queue = False, None  # a pass that fails leaves nothing kept
            read_at = time.monotonic()
            async with transaction(self.sessionmaker) as session:
                rows = await load_pool_rows(session, pool, queue)
                to_kill = await self._kill_targets(session, pool, now, rows.kills)
            if await self._give_up_lost_agents(pool, rows, now):
                queue, read_at = None, time.monotonic()
                async with transaction(self.sessionmaker) as session:
                    rows = await load_pool_rows(session, pool)
                    to_kill = await self._kill_targets(session, pool, now, rows.kills)
            inputs = build_snapshot(
                rows,
                self.registry.in_pool(pool),
                max_aux_per_agent=runner.config.max_aux_containers_per_agent,
                now=now,
                requests=runner.requests,
            )
            # A pass over a large queue is CPU work: keep the event loop serving meanwhile, and
            # hold no transaction open while it runs (apply_plan re-checks what it starts). A
            # short one costs less than the hop to a thread and back.
            snapshot = inputs.snapshot
            if (
                len(snapshot.pending) + len(snapshot.running) + len(snapshot.agents)
                > INLINE_PASS_SIZE
            ):
                plan = await asyncio.to_thread(runner.scheduler.schedule, inputs.snapshot)
            else:
                plan = runner.scheduler.schedule(inputs.snapshot)
            applied = Applied()
            if plan.start or plan.preempt:  # a pass with nothing to do writes nothing
                async with transaction(self.sessionmaker) as session:
                    applied = await apply_plan(
                        session,
                        inputs,
                        plan,
                        self.registry,
                        pool=pool,
                        now=now,
                        default_task_user=self.default_task_user,
                    )
                    if plan.preempt:  # one not running yet is killed at once
                        to_kill = await self._kill_targets(session, pool, now)
            if queue is None:
                queue, runner.queue_read_at = Queue.of(rows), read_at
            runner.queue = queue.without(applied.dequeued)
            for agent_id, message in applied.outgoing:
                handle = self.registry.get(agent_id)
                if handle is not None:
                    handle.send(message)
            for agent_id, message in self._kills_due(runner, to_kill, now):
                handle = self.registry.get(agent_id)
                if handle is not None:
                    handle.send(message)
            result = PassResult(
                pool=pool,
                at=now,
                snapshot=inputs.snapshot,
                plan=plan,
                applied=applied,
                seconds=time.perf_counter() - began,
            )
            runner.last = result
            runner.idle_slots = idle_slots_after(inputs.snapshot, plan, applied.skipped)
            for listener in self.pass_listeners:
                try:
                    listener(result)
                except Exception:  # a listener's bug must not stop scheduling
                    log.exception("pass listener failed for pool %s", pool)
            return result

    async def _give_up_lost_agents(self, pool: str, rows: PoolRows, now: datetime) -> bool:
        """End the work of agents past their reconnect wait and forget them; True if any."""
        placed_on = {agent_id for r in rows.running for agent_id in r.placement}
        lost = agents_past_reconnect_wait(
            self.registry.in_pool(pool),
            placed_on,
            now=now,
            master_started_at=self.started_at,
            wait=self.reconnect_wait(pool),
        )
        for agent_id, why in lost.items():
            handle = self.registry.get(agent_id)
            if handle is not None and handle.connected:
                continue  # it came back since the snapshot
            log.warning("agent %s is lost: %s", agent_id, why)
            async with transaction(self.sessionmaker) as session:
                detail = f"agent {agent_id} was lost: {why}"
                effects = await fail_agent_work(session, agent_id, detail, now)
                take_reschedule(session)  # this pass reloads its rows right away
            self.registry.remove_if_disconnected(agent_id)
            for target, message in effects.signals:
                other = self.registry.get(target)
                if other is not None:
                    other.send(message)
        return bool(lost)

    @staticmethod
    async def _kill_targets(
        session: AsyncSession, pool: str, now: datetime, read: KillCandidates | None = None
    ) -> dict[str, dict[str, Any]]:
        """Live allocations to SIGKILL (id → placement): those of killed trials and commands,
        those with a recorded kill request and preemptions past their timeout (recorded now).
        ``read``: the candidates as this transaction has just read them (load_pool_rows)."""
        candidates = read if read is not None else await kills.kill_candidates(session, pool)
        wanted = dict(candidates.wanted)
        if candidates.preempting:
            wanted.update(await kills.expire_preemptions(session, pool, now))
        return wanted

    def _kills_due(
        self, runner: PoolRunner, wanted: dict[str, dict[str, Any]], now: datetime
    ) -> list[tuple[str, SignalContainer]]:
        """SIGKILL for each container of the wanted allocations; re-sent after the cooldown
        until they end."""
        live: set[str] = set()
        out: list[tuple[str, SignalContainer]] = []
        for allocation_id, placement in sorted(wanted.items()):
            live.add(allocation_id)
            last = runner.kills_sent.get(allocation_id)
            if last is not None and now - last < self.kill_cooldown:
                continue
            runner.kills_sent[allocation_id] = now
            for rank, agent_id in enumerate(sorted(placement)):
                cid = container_id(allocation_id, rank)
                out.append((agent_id, SignalContainer(container_id=cid, signal="SIGKILL")))
        for gone in set(runner.kills_sent) - live:
            del runner.kills_sent[gone]
        return out
