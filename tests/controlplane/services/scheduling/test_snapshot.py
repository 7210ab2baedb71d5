"""Rows and connected agents → the library's snapshot; plans → named devices."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.protocol import Device
from controlplane.services.scheduling.apply import choose_devices
from controlplane.services.scheduling.pools import PoolRunner, Scheduling
from controlplane.services.scheduling.registry import AgentHandle, AgentRegistry
from controlplane.services.scheduling.snapshot import (
    JobRow,
    PendingRow,
    PoolRows,
    Queue,
    RequestMemo,
    RunningRow,
    build_snapshot,
)
from resource_pools.config import ResourcePoolConfig
from resource_pools.config_scheduler import SchedulerConfig
from resource_pools.types import Placement, StartAllocation

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def handle(agent_id: str, slots: int, **kw: object) -> AgentHandle:
    devices = tuple(Device(id=i) for i in range(slots))
    return AgentHandle(
        id=agent_id, resource_pool="default", devices=devices, version="t", registered_at=T0, **kw
    )


def rows() -> PoolRows:
    return PoolRows(
        pending=[PendingRow("1.x", "j1", "TRIAL", 2, False, T0)],
        running=[
            RunningRow("2.y.1", "2.y", "j2", "TRIAL", 1, False, {"a1": [1]}, T0),
            RunningRow("3.z.1", "3.z", "j3", "COMMAND", 0, False, {"a1": []}, T0),
            RunningRow("4.w.1", "4.w", "j3", "TRIAL", 2, False, {"gone": [0, 1]}, T0),
        ],
        jobs=[
            JobRow("j1", None, 1.0, None, 30 * 1024, T0),
            JobRow("j2", 10, 2.0, 4, 10 * 1024, T0),
            JobRow("j3", None, 1.0, None, 10 * 1024 + 1, T0),
        ],
    )


def test_build_snapshot_counts_usage_and_ranks_positions() -> None:
    inputs = build_snapshot(
        rows(), [handle("a1", 4), handle("a2", 2, connected=False)], max_aux_per_agent=7, now=T0
    )
    snap = inputs.snapshot
    agents = {a.id: a for a in snap.agents}
    assert agents["a1"].used_slots == 1 and agents["a1"].zero_slot_running == 1
    assert agents["a1"].max_zero_slot == 7 and agents["a1"].is_schedulable
    assert not agents["a2"].is_schedulable  # disconnected: disabled and draining
    # Work on an agent the master does not know keeps its slots taken.
    assert agents["gone"].used_slots == 2 and not agents["gone"].is_schedulable
    assert [snap.group(j).position for j in ("j2", "j3", "j1")] == [0.0, 1.0, 2.0]
    assert snap.group("j2").priority == 10 and snap.group("j2").max_slots == 4
    running = {r.allocation_id: r for r in snap.running}
    assert running["2.y.1"].request.preemptible and not running["3.z.1"].request.preemptible
    assert inputs.used_devices == {"a1": {1}, "gone": {0, 1}}
    assert snap.pending[0].allocation_id == "1.x" and snap.pending[0].slots == 2


def test_choose_devices_names_free_devices_and_refuses_stale_plans() -> None:
    registry = AgentRegistry()
    registry.register(handle("a1", 4))
    registry.register(handle("a2", 2, enabled=False))
    used = {"a1": {0, 2}}
    ok = StartAllocation("t", (Placement("a1", 2),))
    assert choose_devices(ok, registry, used) == {"a1": [1, 3]}
    assert choose_devices(StartAllocation("t", (Placement("a1", 3),)), registry, used) is None
    assert choose_devices(StartAllocation("t", (Placement("a2", 1),)), registry, used) is None
    assert choose_devices(StartAllocation("t", (Placement("zz", 1),)), registry, used) is None


def test_a_pass_reuses_the_requests_of_unchanged_queue_rows_only() -> None:
    memo = RequestMemo()
    first = build_snapshot(rows(), [], max_aux_per_agent=7, now=T0, requests=memo).snapshot
    again = build_snapshot(rows(), [], max_aux_per_agent=7, now=T0, requests=memo).snapshot
    assert again.pending == first.pending and again.pending[0] is first.pending[0]
    # Each change of the row, or of its job's submission time, builds the request anew, and
    # the result is always what a pass without the memo builds.
    later = T0.replace(minute=5)
    changed = [
        PoolRows(pending=[PendingRow("1.x", "j1", "TRIAL", 4, False, T0)], jobs=rows().jobs),
        PoolRows(pending=[PendingRow("1.x", "j1", "TRIAL", 2, True, T0)], jobs=rows().jobs),
        PoolRows(
            pending=rows().pending,
            jobs=[JobRow("j1", None, 1.0, None, 30 * 1024, later), *rows().jobs[1:]],
        ),
        rows(),
    ]
    for each in changed:
        built = build_snapshot(each, [], max_aux_per_agent=7, now=T0, requests=memo).snapshot
        fresh = build_snapshot(each, [], max_aux_per_agent=7, now=T0).snapshot
        assert built.pending == fresh.pending


def test_the_kept_queue_holds_only_its_own_jobs_and_loses_what_left_it() -> None:
    two = PoolRows(
        pending=[
            PendingRow("1.x", "j1", "TRIAL", 2, False, T0),
            PendingRow("5.v", "j5", "COMMAND", 1, False, T0),
        ],
        running=rows().running,
        jobs=[*rows().jobs, JobRow("j5", None, 1.0, None, 1, T0)],
    )
    queue = Queue.of(two)
    assert [p.task_id for p in queue.pending] == ["1.x", "5.v"]
    assert set(queue.jobs) == {"j1", "j5"}  # the running allocations' jobs are read each pass
    left = queue.without(["5.v", "not-queued"])
    assert [p.task_id for p in left.pending] == ["1.x"] and set(left.jobs) == {"j1"}
    assert queue.without([]) is queue


def _runner() -> PoolRunner:
    return PoolRunner(ResourcePoolConfig(pool_name="default"), SchedulerConfig())


@pytest.mark.parametrize(
    ("stale", "kept", "age_s", "planned_on_it"),
    [
        (False, True, 0.1, True),  # only slots freed since a recent read
        (True, True, 0.1, False),  # poked by something that may change the queue
        (False, False, 0.1, False),  # never read, or the last pass failed
        (False, True, 0.5, False),  # the tick: read again at least every interval
        (False, True, 30.0, False),
    ],
)
def test_a_pass_plans_on_the_kept_queue_only_while_nothing_but_freed_slots_came(
    stale: bool, kept: bool, age_s: float, planned_on_it: bool
) -> None:
    runner = _runner()
    runner.stale, runner.queue_read_at = stale, 100.0
    runner.queue = Queue() if kept else None
    assert (runner.cached_queue(100.0 + age_s, 0.5) is not None) is planned_on_it


def test_a_pool_poked_by_anything_but_a_freed_slot_reads_its_queue_again() -> None:
    runner = _runner()
    scheduling = Scheduling.__new__(Scheduling)
    scheduling.pools = {"default": runner}
    runner.stale, runner.queue = False, Queue()
    scheduling.poke("default", freed=True)
    assert runner.wake.is_set() and not runner.stale
    for poke in ({}, {"arrival_slots": 1}):
        runner.stale = False
        scheduling.poke("default", **poke)
        assert runner.stale, poke
