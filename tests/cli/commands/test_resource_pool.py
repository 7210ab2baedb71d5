"""`det resource-pool list|describe`, and `det job list` across pools with different schedulers."""

from __future__ import annotations

import json

from tests.cli.commands.conftest import (
    StartMaster,
    add_agent,
    det_for,
    eventually,
    experiment_yaml,
    fails,
    ok,
    queue_of,
    running_on,
    submit,
    table_rows,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster

POOLS = [
    {"pool_name": "default", "description": "CPU boxes"},
    {"pool_name": "gpu", "scheduler": {"type": "fair_share"}},
]


async def _two_pools(start_master: StartMaster, agents: list[FakeAgent]) -> LiveMaster:
    """default: one slot, `a` runs and `b` waits. gpu: two slots, `g` runs on one."""
    m = await start_master(resource_pools=POOLS)
    a1 = await add_agent(m, agents, "a1", 1)
    g1 = await add_agent(m, agents, "g1", 2, pool="gpu")
    await submit(m, experiment_yaml("a"))
    await running_on(a1)
    await submit(m, experiment_yaml("b"))
    await submit(m, experiment_yaml("g", pool="gpu"))
    await running_on(g1)
    await queue_of(m, 3)

    async def pools_settled() -> bool:
        pools = (await m.get("/api/v1/resource-pools"))["resourcePools"]
        counts = [(p["queuedJobs"], p["runningJobs"], p["slotsUsed"]) for p in pools]
        return counts == [(1, 1, 1), (0, 1, 1)]

    await eventually(pools_settled, timeout=10)
    return m


def _record(out: str) -> dict[str, str]:
    return {row[0]: row[1] for row in table_rows(out) if row[0]}


async def test_list_and_describe(start_master: StartMaster, agents: list[FakeAgent]) -> None:
    m = await _two_pools(start_master, agents)
    det = det_for(m)

    pools = json.loads(ok(await det("resource-pool", "list", "--json")))["resourcePools"]
    assert [p["name"] for p in pools] == ["default", "gpu"]

    out = ok(await det("rp", "ls"))
    for header in ("Scheduler", "Fitting", "Preemption", "Slots Used", "Wait Reasons"):
        assert header in out
    rows = table_rows(out)
    assert [r[0] for r in rows] == ["default", "gpu"]
    default, gpu = rows
    assert default[1:12] == [
        "compute, aux", "static", "priority", "best", "false", "42", "1", "1/1", "0/100", "1", "1",
    ]  # fmt: skip
    assert default[12].startswith("20") and default[13].endswith(" ms")
    assert default[14] == "insufficient_slots=1"
    assert gpu[1:12] == [
        "", "static", "fair_share", "best", "true", "", "1", "1/2", "0/100", "0", "1",
    ]  # fmt: skip

    described = _record(ok(await det("resource-pool", "describe", "default")))
    assert described["Name"] == "default" and described["Description"] == "CPU boxes"
    assert described["Scheduler"] == "priority" and described["Default Priority"] == "42"
    assert described["Preemption"] == "false" and described["Fitting Policy"] == "best"
    assert described["Default For"] == "compute, aux"
    assert described["Agents"] == "1" and described["Slots (used/total)"] == "1/1"
    assert described["Slot Type"] == "cpu"
    assert described["Aux Containers (running/capacity)"] == "0/100"
    assert described["Queued Jobs"] == "1" and described["Running Jobs"] == "1"
    assert described["Wait Reasons"] == "insufficient_slots=1"
    assert described["Last Pass"] and described["Last Pass Took"].endswith(" ms")

    described = _record(ok(await det("rp", "describe", "gpu")))
    assert described["Scheduler"] == "fair_share" and described["Default Priority"] == ""
    assert described["Slots (used/total)"] == "1/2" and described["Wait Reasons"] == ""
    raw = json.loads(ok(await det("rp", "describe", "gpu", "--json")))
    assert raw["name"] == "gpu" and raw["schedulerType"] == "SCHEDULER_TYPE_FAIR_SHARE"

    fails(await det("rp", "describe", "nope"), "resource pool 'nope' not found", "default, gpu")


async def test_job_list_over_pools_with_different_schedulers(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await _two_pools(start_master, agents)
    det = det_for(m)

    out = ok(await det("job", "list"))
    assert "Priority / Weight" in out and "Resource Pool" in out
    rows = {row[3].split(" ")[0]: row for row in table_rows(out)}
    assert rows["a"][4] == "priority 42" and rows["a"][9] == "default"
    assert rows["g"][4] == "weight 1" and rows["g"][9] == "gpu"
    assert rows["g"][0] == "N/A" and rows["b"][0] == "1"

    out = ok(await det("job", "list", "-p", "gpu"))
    assert "Weight" in out and "Priority" not in out and "Resource Pool" not in out
    assert [row[3] for row in table_rows(out)] == ["g (3)"]
