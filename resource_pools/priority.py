"""Priority scheduler, Determined's default (reference §1.3).

Lower priority numbers are more important. Zero-slot and slotted requests are scheduled in two
independent passes, so neither kind can hold up the other. Each pass simulates placements on the
snapshot's agents level by level; once a level leaves a request unplaced, lower levels are
backfilled (preemptible work only, and only with preemption on). With preemption on, requests
that did not fit look for preemptible victims from the least important level up to their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from resource_pools.agent_pool import AgentPool, Shape, shape_of
from resource_pools.config_scheduler import DEFAULT_PRIORITY
from resource_pools.fitting import find_fit
from resource_pools.quota import QuotaLedger
from resource_pools.types import (
    AgentState,
    FittingPolicy,
    Placement,
    PoolSnapshot,
    PreemptAllocation,
    Request,
    RunningAllocation,
    SchedulingPlan,
    StartAllocation,
    Waiting,
    WaitReason,
)

OrderKey = tuple[float, float, float, str]


def queue_order_key(snapshot: PoolSnapshot, request: Request) -> OrderKey:
    """Order within one priority level: queue position, submission, request time, then id."""
    return (
        snapshot.queue_position(request),
        request.job_submitted_at,
        request.requested_at,
        request.allocation_id,
    )


class PriorityScheduler:
    """Schedules a pool by job priority, with optional preemption of preemptible work."""

    def __init__(
        self,
        preemption: bool = False,
        default_priority: int = DEFAULT_PRIORITY,
        fitting_policy: FittingPolicy = FittingPolicy.BEST,
        allow_heterogeneous: bool = False,
    ) -> None:
        self.preemption = preemption
        self.default_priority = default_priority
        self.fitting_policy = fitting_policy
        self.allow_heterogeneous = allow_heterogeneous

    def priority_of(self, snapshot: PoolSnapshot, request: Request) -> int:
        """The request's job priority, or the pool default when the job sets none."""
        priority = snapshot.group(request.job_id).priority
        return self.default_priority if priority is None else priority

    def schedule(self, snapshot: PoolSnapshot) -> SchedulingPlan:
        """One pass over the pool: what to start, what to preempt, and why the rest waits."""
        start: list[StartAllocation] = []
        preempt: list[PreemptAllocation] = []
        waiting: list[Waiting] = []
        pool = self.pool(snapshot.agents)
        queue = _Queue(self, snapshot)
        quota = QuotaLedger(snapshot)
        for zero_slot in (True, False):
            run = _Pass(self, snapshot, queue, zero_slot, pool.copy() if zero_slot else pool, quota)
            run.run()
            start += run.start
            preempt += [PreemptAllocation(a.allocation_id) for a in run.to_release]
            waiting += run.waiting
        return SchedulingPlan(tuple(start), tuple(preempt), tuple(waiting))

    def pool(self, agents: Sequence[AgentState]) -> AgentPool:
        """A simulation of ``agents`` under this scheduler's fitting settings."""
        return AgentPool(agents, self.fitting_policy, allow_heterogeneous=self.allow_heterogeneous)

    def fit(self, request: Request, agents: Sequence[AgentState]) -> tuple[Placement, ...] | None:
        """Placements for ``request`` on ``agents`` under this scheduler's fitting settings."""
        return find_fit(
            request, agents, self.fitting_policy, allow_heterogeneous=self.allow_heterogeneous
        )


_T = TypeVar("_T")


class _Queue:
    """Each job's priority and queue position, looked up once per pass."""

    def __init__(self, scheduler: PriorityScheduler, snapshot: PoolSnapshot) -> None:
        self._default = scheduler.default_priority
        self._groups = snapshot.groups
        self._jobs: dict[str, tuple[int, float | None]] = {}

    def _job(self, job_id: str) -> tuple[int, float | None]:
        known = self._jobs.get(job_id)
        if known is None:
            group = self._groups.get(job_id)
            if group is None:
                known = (self._default, None)
            else:
                priority = self._default if group.priority is None else group.priority
                known = (priority, group.position)
            self._jobs[job_id] = known
        return known

    def priority(self, request: Request) -> int:
        """``PriorityScheduler.priority_of``."""
        return self._job(request.job_id)[0]

    def position(self, request: Request) -> float:
        """``PoolSnapshot.queue_position``."""
        position = self._job(request.job_id)[1]
        return request.job_submitted_at * 1_000_000 if position is None else position

    def order(
        self, items: Iterable[_T], request_of: Callable[[_T], Request]
    ) -> dict[int, list[_T]]:
        """Items by priority level, each level sorted by ``queue_order_key`` (stable)."""
        buckets: dict[int, list[_T]] = {}
        jobs = self._jobs
        for item in items:
            job_id = request_of(item).job_id
            priority = (jobs.get(job_id) or self._job(job_id))[0]
            buckets.setdefault(priority, []).append(item)

        # One key tuple per item and nothing else: at 100k items, extra objects cost more in
        # garbage collection than the sort itself.
        def key(item: _T) -> OrderKey:
            request = request_of(item)
            position = jobs[request.job_id][1]
            if position is None:
                position = request.job_submitted_at * 1_000_000
            return (position, request.job_submitted_at, request.requested_at, request.allocation_id)

        return {level: sorted(group, key=key) for level, group in buckets.items()}


def _same(request: Request) -> Request:
    return request


def _request_of(allocation: RunningAllocation) -> Request:
    return allocation.request


@dataclass
class _Pass:
    """One of the two passes (zero-slot or slotted), working on its own simulated agents."""

    scheduler: PriorityScheduler
    snapshot: PoolSnapshot
    queue: _Queue
    zero_slot: bool
    pool: AgentPool
    quota: QuotaLedger
    start: list[StartAllocation] = field(default_factory=list)
    waiting: list[Waiting] = field(default_factory=list)
    to_release: list[RunningAllocation] = field(default_factory=list)
    released: set[str] = field(default_factory=set)
    blocker: Request | None = None
    preempting_for: Request | None = None
    # (shape, level) -> (pool generation, queue position) of a victim search that found none.
    victim_misses: dict[tuple[Shape, int], tuple[int, float]] = field(default_factory=dict)
    # Per level, the preemptible running allocations not yet chosen as victims, in queue order,
    # with their queue positions. Victims are always taken from the back of these lists.
    candidates: dict[int, list[RunningAllocation]] = field(default_factory=dict)
    positions: dict[int, list[float]] = field(default_factory=dict)
    held_details: dict[tuple[str, str], str] = field(default_factory=dict)

    def _priority(self, request: Request) -> int:
        return self.queue.priority(request)

    def run(self) -> None:
        zero = self.zero_slot
        pending = self.queue.order(
            (r for r in self.snapshot.pending if (r.slots == 0) == zero), _same
        )
        scheduled = self.queue.order(
            (a for a in self.snapshot.running if (a.request.slots == 0) == zero), _request_of
        )
        for level, allocations in scheduled.items():
            preemptible = [a for a in allocations if a.request.preemptible]
            self.candidates[level] = preemptible
            self.positions[level] = [self.queue.position(a.request) for a in preemptible]
        for level in sorted(pending):
            placed, failed = self._place(pending[level])
            self._decide_starts(placed)
            if failed and self.blocker is None:
                self.blocker = failed[0]
            if self.scheduler.preemption:
                self._preempt_for(failed, level)
            else:
                self.waiting += [self._no_fit(r) for r in failed]

    def _place(
        self, requests: Sequence[Request]
    ) -> tuple[list[tuple[Request, tuple[Placement, ...]]], list[Request]]:
        placed: list[tuple[Request, tuple[Placement, ...]]] = []
        failed: list[Request] = []
        for request in requests:
            # Held by its workspace's quota: it waits, and is neither a blocker nor a reason
            # to preempt (resource_pools/quota.py).
            held = self.quota.refuses(request)
            if held is not None:
                self.waiting.append(held)
                continue
            fit = self.pool.find_fit(request)
            if fit is None:
                failed.append(request)
                continue
            self.pool.reserve(fit, request)
            self.quota.charge(request)
            placed.append((request, fit))
        return placed, failed

    def _decide_starts(self, placed: Sequence[tuple[Request, tuple[Placement, ...]]]) -> None:
        # Placed but unstarted requests keep their simulated reservation, as in Determined, so
        # lower levels and victim searches see the space as taken.
        for request, fit in placed:
            if self.to_release:
                self.waiting.append(self._held(request, "which waits for a preemption"))
            elif self.blocker is None:
                self.start.append(StartAllocation(request.allocation_id, fit))
            elif self.scheduler.preemption and request.preemptible:
                self.start.append(StartAllocation(request.allocation_id, fit, backfilled=True))
            else:
                reason = "only preemptible tasks are backfilled"
                if not self.scheduler.preemption:
                    reason = "backfilling needs preemption on"
                self.waiting.append(self._held(request, reason))

    def _held(self, request: Request, why: str) -> Waiting:
        blocker = self.preempting_for if self.to_release else self.blocker
        assert blocker is not None
        detail = self.held_details.get((blocker.allocation_id, why))
        if detail is None:
            detail = f"behind priority {self._priority(blocker)} job {blocker.job_id}, {why}"
            self.held_details[(blocker.allocation_id, why)] = detail
        return Waiting(request.allocation_id, WaitReason.BLOCKED_BY_HIGHER_PRIORITY, detail)

    def _no_fit(self, request: Request) -> Waiting:
        return self.pool.explain_no_fit(request)

    def _preempt_for(self, failed: Sequence[Request], level: int) -> None:
        for request in failed:
            # Requests of its workspace placed since it failed may have used up the quota.
            held = self.quota.refuses(request)
            if held is not None:
                self.waiting.append(held)
                continue
            if self._known_hopeless(request, level):
                self.waiting.append(self._no_fit(request))
                continue
            fit = self.pool.find_fit(request)
            if fit is not None:
                self.pool.reserve(fit, request)
                self.quota.charge(request)
                detail = "fits once the preemptions chosen in this pass complete"
                self.waiting.append(
                    Waiting(request.allocation_id, WaitReason.WAITING_FOR_PREEMPTION, detail)
                )
                continue
            victims = self._find_victims(request, level)
            if victims is None:
                self.waiting.append(self._no_fit(request))
                continue
            if self.preempting_for is None:
                self.preempting_for = request
            self.quota.charge(request)  # its room is reserved: it starts once they are gone
            self.to_release += victims
            self.released.update(v.allocation_id for v in victims)
            names = ", ".join(v.allocation_id for v in victims)
            detail = f"preempting {names}"
            self.waiting.append(
                Waiting(request.allocation_id, WaitReason.WAITING_FOR_PREEMPTION, detail)
            )

    def _known_hopeless(self, request: Request, level: int) -> bool:
        """True when the memos already say: no fit now, and no victims either."""
        shape = shape_of(request)
        if not self.pool.known_not_to_fit(shape):
            return False
        miss = self.victim_misses.get((shape, level))
        return (
            miss is not None
            and miss[0] == self.pool.generation
            and self.queue.position(request) >= miss[1]
        )

    def _find_victims(self, request: Request, level: int) -> list[RunningAllocation] | None:
        """Victims that make ``request`` fit, reserving its space; None when none suffice.

        Candidates go from the least important level up to the request's own, each level
        from the back of the queue; at its own level only those queued behind it. Each is
        freed on the pool and the request refitted; when none suffice, the pool is rolled
        back. A failed search is remembered: with no capacity freed since, a request of the
        same shape and level queued no earlier (so with no more candidates) fails too.
        """
        position = self.queue.position(request)
        memo_key = (shape_of(request), level)
        miss = self.victim_misses.get(memo_key)
        if miss is not None and miss[0] == self.pool.generation and position >= miss[1]:
            return None
        self.pool.begin()
        try:
            victims = self._search(request, level, position)
        except BaseException:
            self.pool.rollback()
            raise
        if victims is None:
            self.pool.rollback()
            self.victim_misses[memo_key] = (self.pool.generation, position)
            return None
        self.pool.commit()
        chosen = {v.allocation_id for v in victims}
        for lv, live in self.candidates.items():
            while live and live[-1].allocation_id in chosen:
                live.pop()
                self.positions[lv].pop()
        return victims

    def _search(
        self, request: Request, level: int, position: float
    ) -> list[RunningAllocation] | None:
        victims: list[RunningAllocation] = []
        for candidate_level in sorted((lv for lv in self.candidates if lv >= level), reverse=True):
            live, positions = self.candidates[candidate_level], self.positions[candidate_level]
            for i in range(len(live) - 1, -1, -1):
                # Positions ascend within a level, so the first one not behind ends the level.
                if candidate_level == level and positions[i] <= position:
                    break
                candidate = live[i]
                if candidate.allocation_id in self.released:
                    continue
                self.pool.release(candidate.placements)
                victims.append(candidate)
                fit = self.pool.find_fit(request)
                if fit is not None:
                    self.pool.reserve(fit, request)
                    return victims
        return None
