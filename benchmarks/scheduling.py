"""Benchmark 3: one scheduling pass over N pending requests and 1,000 agents, per scheduler.

The pool: 1,000 agents of 1, 4 and 8 slots (30/40/30 %), about half their slots held by running
allocations (mostly preemptible trials, some 16-slot gangs over two whole 8-slot agents, a few
aux containers), and N pending requests in jobs of 1-8 requests with mixed priorities, weights
and slot counts (0 to 16). Only ``schedule(snapshot)`` is timed; building the snapshot is not.
Pure CPU: no database, no servers. The snapshot comes from a fixed seed, so every run and
every scheduler sees the same pool.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from resource_pools.factory import Scheduler
from resource_pools.fair_share import FairShareScheduler
from resource_pools.priority import PriorityScheduler
from resource_pools.round_robin import RoundRobinScheduler
from resource_pools.types import (
    AgentState,
    JobSettings,
    Placement,
    PoolSnapshot,
    Request,
    RunningAllocation,
    SchedulingPlan,
)

TARGET_MS = 100.0  # median at N = 10,000 for priority with preemption and for fair share
TARGET_PENDING = 10_000
TARGETED = ("priority, preemption on", "fair share")

AGENT_SIZES = ((1, 30), (4, 40), (8, 30))  # (slots, share in %)
JOB_SLOTS = ((0, 5), (1, 35), (2, 20), (4, 25), (8, 12), (16, 3))  # slots per request, %
PRIORITIES = (10, 30, 42, 42, 42, 42, 50, 50, 70, 90)
WEIGHTS = (0.5, 1.0, 1.0, 1.0, 2.0)
RUNNING_JOBS = 300
_T = TypeVar("_T")
GANGS = 10  # running 16-slot allocations, each on two whole 8-slot agents
AUX_RUNNING = 30  # running zero-slot allocations


SCHEDULERS: tuple[tuple[str, Callable[[], Scheduler]], ...] = (
    ("priority, preemption on", lambda: PriorityScheduler(preemption=True)),
    ("priority, preemption off", lambda: PriorityScheduler(preemption=False)),
    ("fair share", FairShareScheduler),
    ("round robin", RoundRobinScheduler),
)


def _pick(rng: random.Random, table: tuple[tuple[_T, int], ...]) -> _T:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table])[0]


@dataclass
class _Builder:
    rng: random.Random
    agents: list[AgentState] = field(default_factory=list)
    running: list[RunningAllocation] = field(default_factory=list)
    groups: dict[str, JobSettings] = field(default_factory=dict)
    job_slots: dict[str, int] = field(default_factory=dict)
    submitted: dict[str, float] = field(default_factory=dict)

    def job(self, index: int) -> str:
        job_id = f"job{index:06d}"
        if job_id not in self.groups:
            rng = self.rng
            priority = rng.choice(PRIORITIES)
            self.groups[job_id] = JobSettings(job_id, weight=rng.choice(WEIGHTS), priority=priority)
            self.job_slots[job_id] = _pick(rng, JOB_SLOTS)
            self.submitted[job_id] = float(index)
        return job_id

    def request(self, job_id: str, number: int, slots: int | None = None) -> Request:
        preemptible = self.rng.random() < 0.9
        submitted = self.submitted[job_id]
        return Request(
            f"{job_id}-a{number}",
            job_id,
            self.job_slots[job_id] if slots is None else slots,
            preemptible=preemptible,
            job_submitted_at=submitted,
            requested_at=submitted + number,
        )


def build_snapshot(pending: int, agents: int = 1_000, seed: int = 0) -> PoolSnapshot:
    """The benchmark pool: ``agents`` agents about half full and ``pending`` pending requests."""
    b = _Builder(random.Random(seed))
    sizes = [_pick(b.rng, AGENT_SIZES) for _ in range(agents)]
    used = [0] * agents
    aux = [0] * agents
    numbers: dict[str, int] = {}

    def run_on(job_id: str, placements: list[tuple[int, int]], slots: int) -> None:
        numbers[job_id] = numbers.get(job_id, 0) + 1
        request = b.request(job_id, numbers[job_id], slots)
        for index, held in placements:
            used[index] += held
            aux[index] += held == 0
        running = tuple(Placement(f"agent{i:04d}", held) for i, held in placements)
        b.running.append(RunningAllocation(request, running))

    eights = [i for i, size in enumerate(sizes) if size == 8]
    gang_agents = set(eights[: 2 * GANGS])
    for g in range(GANGS):
        pair = eights[2 * g : 2 * g + 2]
        run_on(b.job(b.rng.randrange(RUNNING_JOBS)), [(i, 8) for i in pair], 16)
    for index, size in enumerate(sizes):
        if index in gang_agents:
            continue
        for held in _half(b.rng, size):
            run_on(b.job(b.rng.randrange(RUNNING_JOBS)), [(index, held)], held)
    for _ in range(AUX_RUNNING):
        run_on(b.job(b.rng.randrange(RUNNING_JOBS)), [(b.rng.randrange(agents), 0)], 0)
    b.agents = [
        AgentState(f"agent{i:04d}", size, used_slots=used[i], zero_slot_running=aux[i])
        for i, size in enumerate(sizes)
    ]
    requests: list[Request] = []
    job_index = 0
    while len(requests) < pending:
        # The first jobs are the running ones: they queue more trials behind those they run.
        job_id = b.job(job_index)
        for _ in range(min(b.rng.randint(1, 8), pending - len(requests))):
            numbers[job_id] = numbers.get(job_id, 0) + 1
            requests.append(b.request(job_id, numbers[job_id]))
        job_index += 1
    return PoolSnapshot(tuple(b.agents), tuple(requests), tuple(b.running), b.groups, now=1e6)


def _half(rng: random.Random, size: int) -> list[int]:
    """Running allocations that fill about half of an agent of ``size`` slots."""
    if size == 1:
        return [1] if rng.random() < 0.5 else []
    if size == 4:
        return rng.choice(([2], [1, 1], [2, 1], [1]))
    return rng.choice(([4], [2, 2], [1, 1, 2], [4, 1], [2, 1]))


@dataclass
class PassTiming:
    """Repeated passes of one scheduler over one snapshot."""

    scheduler: str
    pending: int
    samples_ms: list[float]
    starts: int
    preempts: int
    waiting: int

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p95_ms(self) -> float:
        """Nearest-rank 95th percentile (the maximum for fewer than 20 samples)."""
        ordered = sorted(self.samples_ms)
        return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]

    @property
    def misses_target(self) -> bool:
        return (
            self.pending == TARGET_PENDING
            and self.scheduler in TARGETED
            and self.median_ms > TARGET_MS
        )


@dataclass
class SchedulingResult:
    """Every timing of one run, and the pool they were measured on."""

    agents: int
    slots: int
    used_slots: int
    running: int
    timings: list[PassTiming] = field(default_factory=list)
    build_s: dict[int, float] = field(default_factory=dict)
    skipped: list[int] = field(default_factory=list)

    def sizes(self) -> list[int]:
        """Pool sizes measured, smallest first."""
        return sorted({t.pending for t in self.timings})

    def timing(self, scheduler: str, pending: int) -> PassTiming | None:
        return next(
            (t for t in self.timings if (t.scheduler, t.pending) == (scheduler, pending)), None
        )


def repetitions_for(pending: int) -> int:
    """Fewer repetitions for the big pools, so the whole benchmark stays within minutes."""
    if pending <= 1_000:
        return 15
    if pending <= 10_000:
        return 7
    return 3


def time_pass(scheduler: Scheduler, snapshot: PoolSnapshot, repetitions: int) -> PassTiming:
    """Run ``scheduler`` over ``snapshot`` ``repetitions`` times; the first plan is kept."""
    samples: list[float] = []
    plan = SchedulingPlan()
    for _ in range(repetitions):
        gc.collect()
        started = time.perf_counter()
        plan = scheduler.schedule(snapshot)
        samples.append((time.perf_counter() - started) * 1000)
    return PassTiming("", len(snapshot.pending), samples, len(plan.start), len(plan.preempt),
                      len(plan.waiting))  # fmt: skip


def run(
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000),
    agents: int = 1_000,
    repetitions: Callable[[int], int] = repetitions_for,
    say: Callable[[str], None] = print,
    deadline: float | None = None,
) -> SchedulingResult:
    """Time every scheduler at every pool size; the same seeded snapshot for all schedulers.

    Past ``deadline`` (a ``time.perf_counter()`` value) the remaining passes are skipped and
    listed in ``skipped``.
    """
    result = SchedulingResult(agents=agents, slots=0, used_slots=0, running=0)
    for pending in sizes:
        if deadline is not None and time.perf_counter() > deadline:
            result.skipped.append(pending)
            continue
        started = time.perf_counter()
        snapshot = build_snapshot(pending, agents)
        result.slots = sum(a.slots for a in snapshot.agents)
        result.used_slots = sum(a.used_slots for a in snapshot.agents)
        result.running = len(snapshot.running)
        result.build_s[pending] = time.perf_counter() - started
        reps = repetitions(pending)
        for name, make in SCHEDULERS:
            say(f"  {name}: {pending:,} pending × {reps} passes …")
            timing = time_pass(make(), snapshot, reps)
            timing.scheduler = name
            result.timings.append(timing)
    return result
