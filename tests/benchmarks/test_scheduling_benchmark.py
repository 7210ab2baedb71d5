"""The scheduling benchmark's pool is consistent, and its run and table work at a tiny size."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from benchmarks.report import Results, _tables
from benchmarks.scheduling import SCHEDULERS, build_snapshot, run
from resource_pools.fair_share import FairShareScheduler
from resource_pools.fitting import reserve
from resource_pools.priority import PriorityScheduler
from resource_pools.round_robin import RoundRobinScheduler
from resource_pools.types import AgentState, FittingPolicy


def test_snapshot_usage_matches_its_running_allocations() -> None:
    snapshot = build_snapshot(500, agents=200, seed=3)
    idle = tuple(AgentState(a.id, a.slots, max_zero_slot=a.max_zero_slot) for a in snapshot.agents)
    for allocation in snapshot.running:
        idle = reserve(idle, allocation.placements, allocation.request)
    assert idle == snapshot.agents  # reserving every running allocation rebuilds the usage
    assert len(snapshot.pending) == 500
    assert set(Counter(a.slots for a in snapshot.agents)) == {1, 4, 8}
    used = sum(a.used_slots for a in snapshot.agents) / sum(a.slots for a in snapshot.agents)
    assert 0.35 < used < 0.65
    assert len({snapshot.group(r.job_id).priority for r in snapshot.pending}) > 3
    assert build_snapshot(500, agents=200, seed=3) == snapshot  # seeded: the same every run


def test_run_times_every_scheduler_and_prints_a_table() -> None:
    result = run((50, 200), agents=40, repetitions=lambda n: 2, say=lambda _: None)
    assert [(t.scheduler, t.pending) for t in result.timings] == [
        (name, n) for n in (50, 200) for name, _ in SCHEDULERS
    ]
    assert all(len(t.samples_ms) == 2 and t.p95_ms >= t.median_ms > 0 for t in result.timings)
    assert all(t.starts + t.waiting == t.pending for t in result.timings)
    title, header, rows, notes = _tables(Results(settings={}, scheduling=result))[0]
    assert "40 agents" in title
    assert [row[0] for row in rows] == [name for name, _ in SCHEDULERS]
    assert len(header) == len(rows[0]) == 5
    assert notes[0] == "passes per point: 2 at N = 50, 2 at N = 200"


def test_run_skips_sizes_past_the_deadline() -> None:
    result = run((50,), agents=10, repetitions=lambda n: 1, say=lambda _: None, deadline=0.0)
    assert (result.timings, result.skipped) == ([], [50])


# sha256(repr(plan))[:16] of the plans the schedulers made before they fitted through AgentPool
# (commit 4c77bb9), for build_snapshot(400, 60, seed): the indexes change the cost, not a plan.
# If a scheduler's behaviour or the benchmark pool changes on purpose, recompute these.
PLAN_DIGESTS = {
    (0, "best"): ("bcd97005e9492cd1", "dfdda16e2b930261", "46cee149f31fdaed", "1b150b7b6bf87511"),
    (0, "worst"): ("9554cda7fabf6f7b", "8d02b51e5bb7e2e3", "fa84ee35927019bd", "2b017c99a1b50538"),
    (1, "best"): ("523aebf378d4c59c", "c0dbc039fa98de4a", "47d47355bcafe3f7", "c88a4af44feca572"),
    (1, "worst"): ("0f7052e49ff23198", "d9b4c21de5bc38e5", "bf467835aeb77c4f", "1c4e4e1d9ae54331"),
}


@pytest.mark.parametrize(("seed", "policy"), list(PLAN_DIGESTS))
def test_plans_are_those_of_the_unindexed_schedulers(seed: int, policy: str) -> None:
    snapshot = build_snapshot(400, 60, seed)
    fitting, heterogeneous = FittingPolicy(policy), policy == "worst"
    schedulers = (
        PriorityScheduler(True, 42, fitting, heterogeneous),
        PriorityScheduler(False, 42, fitting, heterogeneous),
        FairShareScheduler(fitting, heterogeneous),
        RoundRobinScheduler(fitting, heterogeneous),
    )
    digests = tuple(
        hashlib.sha256(repr(s.schedule(snapshot)).encode()).hexdigest()[:16] for s in schedulers
    )
    assert digests == PLAN_DIGESTS[(seed, policy)]
