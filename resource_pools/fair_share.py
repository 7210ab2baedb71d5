"""Fair-share scheduler, Determined's deprecated alternative (reference §1.4).

Zero-slot requests start whenever an aux place is free. Slotted work is shared between jobs by
progressive filling (max-min fairness) weighted by ``JobSettings.weight`` and capped by
``max_slots``; a job over its offer gives back preemptible allocations, oldest first, and a job
under it starts pending requests first-fit within the difference.

Two deliberate differences from Determined's code, both so that a plan never over-commits:
whether a pending request "fits somewhere" is judged on the agents with every preemptible
allocation freed (the room fair share can make), and starts are placed one after another on the
agents left once this pass's preemptions are freed, so a start that no longer fits waits here
instead of being refused later by the pool loop.

Workspace slot quotas (resource_pools/quota.py) are applied to demand: pending requests are
admitted in task order while their workspace's running slots plus those admitted stay within its
quota; the rest wait and ask for no share. Starts never exceed admitted demand, so no plan puts
a workspace over its quota, and no one is preempted to make room that a quota would not let be
used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from resource_pools.agent_pool import AgentPool
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

TaskKey = tuple[float, float, str]


def task_order_key(request: Request) -> TaskKey:
    """Determined's task-list order: job submission, then request time, then allocation id."""
    return (request.job_submitted_at, request.requested_at, request.allocation_id)


@dataclass(frozen=True, slots=True)
class GroupState:
    """One job as progressive filling sees it.

    ``demand`` is already capped by ``max_slots``; ``active`` counts allocated slots and
    ``presubscribed`` the non-preemptible part of them. ``smallest_pending`` is None when the
    job has nothing pending; the deadlock breaker only disables jobs that do.
    """

    job_id: str
    demand: int
    weight: float = 1.0
    active: int = 0
    presubscribed: int = 0
    registered_at: float = 0.0
    smallest_pending: int | None = None


def compute_offers(groups: Sequence[GroupState], capacity: int) -> dict[str, int]:
    """Slots offered to each job by weighted progressive filling over ``capacity`` slots.

    Non-preemptible slots are offered first. Then, in rounds, each unsatisfied job gets
    ``max(1, floor(round_capacity * weight / total_weight))``, capped by what is left and by
    its remaining demand, jobs with the smallest demand (then oldest) first. With every
    remaining weight 0, each job gets 1 slot a round. When capacity runs out, the newest job
    whose smallest pending request exceeds its offer is disabled (offer 0) and its slots go back.
    """
    filling = _Filling(sorted(groups, key=lambda g: (g.demand, g.registered_at, g.job_id)))
    filling.capacity = capacity - sum(g.presubscribed for g in groups)
    while True:
        progressed = filling.round()
        if filling.capacity <= 0 and filling.break_deadlock():
            continue
        if not progressed:
            return filling.offers()


class _Filling:
    """Progressive filling state, built so a round costs the jobs it serves, not every job.

    A job stops wanting (satisfied or disabled) for good, so the wanting jobs are found by
    skipping ahead through ``_next`` (union-find style), the deadlock breaker's newest-first
    scan resumes where it stopped, and the total weight of wanting jobs is kept as it changes.
    The total is kept exactly as scaled integers when every partial sum of the weights is an
    exact float (any weights in halves, quarters... of moderate size); then it equals the
    float sum over the wanting jobs in order bit for bit. Other weights are summed afresh.
    """

    def __init__(self, groups: Sequence[GroupState]) -> None:
        self.groups = groups
        self.offered = [g.presubscribed for g in groups]
        self.disabled = [False] * len(groups)
        self.capacity = 0
        self._next = list(range(len(groups) + 1))
        self._newest_first = sorted(
            range(len(groups)),
            key=lambda i: (groups[i].registered_at, groups[i].job_id),
            reverse=True,
        )
        self._newest_at = 0
        self._scaled, self._scale = _exact_weights(groups)
        self._wanting_scaled = 0
        for i in range(len(groups)):
            if self._wanting(i):
                self._wanting_scaled += self._scaled[i] if self._scaled else 0
            else:
                self._next[i] = i + 1

    def offers(self) -> dict[str, int]:
        return {g.job_id: self.offered[i] for i, g in enumerate(self.groups)}

    def _wanting(self, i: int) -> bool:
        return not self.disabled[i] and self.offered[i] < self.groups[i].demand

    def _first_wanting(self, i: int) -> int:
        """The first wanting job at index >= i (len(groups) when none)."""
        root = i
        while self._next[root] != root:
            root = self._next[root]
        while self._next[i] != root:  # path compression
            self._next[i], i = root, self._next[i]
        return root

    def _stop_wanting(self, i: int) -> None:
        self._next[i] = i + 1
        if self._scaled:
            self._wanting_scaled -= self._scaled[i]

    def _total_weight(self) -> float:
        if self._scaled:
            return self._wanting_scaled / self._scale
        total: float = 0
        i = self._first_wanting(0)
        while i < len(self.groups):
            total += self.groups[i].weight
            i = self._first_wanting(i + 1)
        return total

    def round(self) -> bool:
        start_capacity, total = self.capacity, self._total_weight()
        progressed = False
        i = self._first_wanting(0)
        while i < len(self.groups) and self.capacity > 0:
            group = self.groups[i]
            # Go divides 0 by 0 here and falls through to the 1-slot minimum; say so explicitly.
            share = 1 if total == 0 else math.floor(start_capacity * group.weight / total)
            want = group.demand - self.offered[i]
            offer = min(max(1, share), self.capacity, want)
            self.offered[i] += offer
            self.capacity -= offer
            progressed = True
            if offer == want:
                self._stop_wanting(i)
                total = self._total_weight()
            i = self._first_wanting(i + 1)
        return progressed

    def break_deadlock(self) -> bool:
        # A job that fails the test now fails it for good (offers only grow; wanting ends for
        # good), so the newest-first scan never needs to look back.
        while self._newest_at < len(self._newest_first):
            i = self._newest_first[self._newest_at]
            smallest = self.groups[i].smallest_pending
            if self._wanting(i) and smallest is not None and smallest > self.offered[i]:
                self.disabled[i] = True
                self._stop_wanting(i)
                self.capacity += self.offered[i]
                self.offered[i] = 0
                return True
            self._newest_at += 1
        return False


def _exact_weights(groups: Sequence[GroupState]) -> tuple[list[int], int]:
    """Weights as integers over one power-of-two scale, or ([], 1) when sums could round."""
    try:
        ratios = [g.weight.as_integer_ratio() for g in groups]
    except (OverflowError, ValueError):  # inf or nan
        return [], 1
    scale = max((den for _, den in ratios), default=1)
    scaled = [num * (scale // den) for num, den in ratios]
    if not scaled or min(scaled) < 0 or sum(scaled) >= 2**53:
        return [], 1
    return scaled, scale


@dataclass
class _Job:
    job_id: str
    pending: list[Request]
    allocated: list[RunningAllocation]


class FairShareScheduler:
    """Shares a pool's slots between jobs by weight, preempting jobs over their share."""

    def __init__(
        self,
        fitting_policy: FittingPolicy = FittingPolicy.BEST,
        allow_heterogeneous: bool = False,
    ) -> None:
        self.fitting_policy = fitting_policy
        self.allow_heterogeneous = allow_heterogeneous

    def schedule(self, snapshot: PoolSnapshot) -> SchedulingPlan:
        """One pure pass: zero-slot starts, offers per job, then preemptions and starts."""
        return _Pass(self, snapshot).run()

    def fit(self, request: Request, agents: Sequence[AgentState]) -> tuple[Placement, ...] | None:
        """Placements for ``request`` on ``agents`` under this scheduler's fitting settings."""
        return find_fit(
            request, agents, self.fitting_policy, allow_heterogeneous=self.allow_heterogeneous
        )


def _freed(pool: AgentPool, allocations: Iterable[RunningAllocation]) -> AgentPool:
    """A copy of ``pool`` with these allocations' slots given back (aux places are kept)."""
    pool = pool.copy()
    for allocation in allocations:
        pool.release(p for p in allocation.placements if p.slots > 0)
    return pool


class _Pass:
    def __init__(self, scheduler: FairShareScheduler, snapshot: PoolSnapshot) -> None:
        self.scheduler = scheduler
        self.snapshot = snapshot
        self.capacity = sum(a.total_slots for a in snapshot.agents)
        self.agents = AgentPool(
            snapshot.agents,
            scheduler.fitting_policy,
            allow_heterogeneous=scheduler.allow_heterogeneous,
        )
        self.reachable = _freed(self.agents, (r for r in snapshot.running if r.request.preemptible))
        self.start: list[StartAllocation] = []
        self.preempt: list[PreemptAllocation] = []
        self.preempted: set[str] = set()
        self.waiting: list[Waiting] = []
        self.quota = QuotaLedger(snapshot)

    def run(self) -> SchedulingPlan:
        pending = sorted(self.snapshot.pending, key=task_order_key)
        jobs = self._jobs(pending)
        states = [self._group_state(job) for job in jobs.values()]
        offers = compute_offers(states, self.capacity)
        for job in jobs.values():
            self._release_over_share(job, offers[job.job_id])
        agents = self._after_preemptions()
        self._start_zero_slot(pending, agents)
        order = sorted(states, key=lambda g: (g.demand, g.registered_at, g.job_id))
        for state in order:
            self._start_within_offer(jobs[state.job_id], offers[state.job_id], agents)
        return SchedulingPlan(tuple(self.start), tuple(self.preempt), tuple(self.waiting))

    def _jobs(self, pending: Sequence[Request]) -> dict[str, _Job]:
        """Jobs with the requests fair share counts; the others are told why they wait."""
        jobs: dict[str, _Job] = {}
        running = sorted(self.snapshot.running, key=lambda r: task_order_key(r.request))
        for allocation in running:
            if 0 < allocation.slots <= self.capacity:
                self._job(jobs, allocation.job_id).allocated.append(allocation)
        for request in pending:
            if request.is_zero_slot:
                continue
            if request.slots > self.capacity:
                detail = f"{request.slots} slots requested, the pool has {self.capacity} in total"
                self._wait(request, WaitReason.EXCEEDS_POOL_CAPACITY, detail)
            elif not self.reachable.fits(request):
                self.waiting.append(self.reachable.explain_no_fit(request))
            elif (held := self.quota.refuses(request)) is not None:
                self.waiting.append(held)
            else:
                self.quota.charge(request)  # admitted to the job's demand
                self._job(jobs, request.job_id).pending.append(request)
        return jobs

    def _after_preemptions(self) -> AgentPool:
        running = self.snapshot.running
        preempted = (r for r in running if r.allocation_id in self.preempted)
        return _freed(self.agents, preempted)

    @staticmethod
    def _job(jobs: dict[str, _Job], job_id: str) -> _Job:
        job = jobs.get(job_id)
        if job is None:
            job = jobs[job_id] = _Job(job_id, [], [])
        return job

    def _group_state(self, job: _Job) -> GroupState:
        settings = self.snapshot.group(job.job_id)
        demand = active = presubscribed = 0
        submitted = [a.request.job_submitted_at for a in job.allocated]
        for allocation in job.allocated:
            held = allocation.slots
            demand += allocation.request.slots
            active += held
            if not allocation.request.preemptible:
                presubscribed += held
        smallest: int | None = None
        for request in job.pending:
            demand += request.slots
            submitted.append(request.job_submitted_at)
            if smallest is None or request.slots < smallest:
                smallest = request.slots
        registered_at = min(submitted)
        if settings.max_slots is not None:
            demand = min(demand, settings.max_slots)
        return GroupState(
            job_id=job.job_id,
            demand=demand,
            weight=settings.weight,
            active=active,
            presubscribed=presubscribed,
            registered_at=registered_at,
            smallest_pending=smallest,
        )

    def _release_over_share(self, job: _Job, offered: int) -> None:
        active = sum(a.slots for a in job.allocated)
        for allocation in job.allocated:
            if active <= offered:
                break
            if allocation.request.preemptible:
                self.preempt.append(PreemptAllocation(allocation.allocation_id))
                self.preempted.add(allocation.allocation_id)
                active -= allocation.slots

    def _start_zero_slot(self, pending: Iterable[Request], agents: AgentPool) -> None:
        for request in pending:
            if request.is_zero_slot:
                self._try_start(request, agents)

    def _start_within_offer(self, job: _Job, offered: int, agents: AgentPool) -> None:
        used = sum(a.slots for a in job.allocated)
        # A job over its offer only gives back this pass; it never starts and stops at once.
        releasing = used > offered
        detail = ""  # the wait detail for the current `used`, built once
        for request in job.pending:
            if releasing or used + request.slots > offered:
                if not detail:
                    detail = (
                        f"job {job.job_id} is offered {offered} of {self.capacity} slots "
                        f"and uses {used}"
                    )
                self._wait(request, WaitReason.OVER_FAIR_SHARE, detail)
                continue
            if self._try_start(request, agents):
                used += request.slots
                detail = ""

    def _try_start(self, request: Request, agents: AgentPool) -> bool:
        placements = agents.find_fit(request)
        if placements is None:
            self.waiting.append(agents.explain_no_fit(request))
            return False
        self.start.append(StartAllocation(request.allocation_id, placements))
        agents.reserve(placements, request)
        return True

    def _wait(self, request: Request, reason: WaitReason, detail: str) -> None:
        self.waiting.append(Waiting(request.allocation_id, reason, detail))
