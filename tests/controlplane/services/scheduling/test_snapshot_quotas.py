"""Each job's workspace and that workspace's quota in the pool reach the library's snapshot,
and the pool's scheduler holds the job back with them (the rows as load_pool_rows reads them:
the quota comes joined to each job row)."""

from __future__ import annotations

from datetime import UTC, datetime

from agent.protocol import Device
from controlplane.services.scheduling.registry import AgentHandle
from controlplane.services.scheduling.snapshot import (
    JobRow,
    PendingRow,
    PoolRows,
    RunningRow,
    build_snapshot,
)
from resource_pools.priority import PriorityScheduler
from resource_pools.types import WaitReason

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_jobs_carry_their_workspace_and_its_quota() -> None:
    rows = PoolRows(
        pending=[PendingRow("1.x", "j1", "TRIAL", 2, False, T0)],
        running=[RunningRow("2.y.1", "2.y", "j2", "TRIAL", 2, False, {"a1": [0, 1]}, T0)],
        jobs=[
            JobRow("j1", None, 1.0, None, 2048, T0, workspace_id=5, workspace_quota=2),
            JobRow("j2", None, 1.0, None, 1024, T0, workspace_id=5, workspace_quota=2),
            JobRow("j3", None, 1.0, None, 4096, T0, workspace_id=6),
        ],
    )
    devices = tuple(Device(id=i) for i in range(8))
    agent = AgentHandle(
        id="a1", resource_pool="default", devices=devices, version="t", registered_at=T0
    )
    snap = build_snapshot(rows, [agent], max_aux_per_agent=10, now=T0).snapshot
    assert dict(snap.quotas) == {"5": 2}
    assert snap.group("j1").workspace == "5" and snap.group("j3").workspace == "6"
    plan = PriorityScheduler().schedule(snap)
    assert plan.start == ()
    (waiting,) = plan.waiting
    assert waiting.reason is WaitReason.WORKSPACE_QUOTA
    assert waiting.detail == "waiting: workspace quota 2 of 2 slots in use"
