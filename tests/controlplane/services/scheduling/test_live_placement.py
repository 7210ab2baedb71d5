"""Agents register over the agent protocol; the pool's scheduler places trials on them."""

from __future__ import annotations

from agent.protocol import ContainerState
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    experiment_yaml,
    submit,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually


async def test_registered_agent_gets_the_trial(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "agent-1", 2)
    listed = await m.get("/api/v1/agents")
    assert [a["id"] for a in listed["agents"]] == ["agent-1"]
    assert len(listed["agents"][0]["slots"]) == 2

    exp = (await submit(m, experiment_yaml(slots=2)))["experiment"]

    async def started() -> bool:
        return len(agent.started) == 1

    await eventually(started, timeout=5)
    (start,) = agent.started.values()
    assert start.spec.task_type == "TRIAL"
    assert start.spec.slots == 2 and len(start.container.devices) == 2
    token = start.spec.environment["DET_SESSION_TOKEN"]
    alloc = start.spec.allocation_id

    # The container's token authenticates as the task: it can read its preemption signal.
    r = await m.http.get(
        f"/api/v1/allocations/{alloc}/signals/preemption",
        params={"timeoutSeconds": 0},
        headers={"Grpc-Metadata-x-allocation-token": f"Bearer {token}"},
    )
    assert r.status_code == 200 and r.json()["preempt"] is False

    async def slot_busy() -> bool:
        a = (await m.get("/api/v1/agents/agent-1"))["agent"]
        states = [s.get("container", {}) or {} for s in a["slots"].values()]
        return all(c.get("state") == "STATE_RUNNING" for c in states)

    await eventually(slot_busy, timeout=5)

    # The trial exits 0 without a preemption: it completes, and so does the experiment.
    await agent.exit(next(iter(agent.started)), 0)

    async def completed() -> bool:
        e = (await m.get(f"/api/v1/experiments/{exp['id']}"))["experiment"]
        return e["state"] == "STATE_COMPLETED"

    await eventually(completed, timeout=5)
    assert ContainerState.TERMINATED


async def test_job_larger_than_the_pool_is_refused(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    await add_agent(m, agents, "agent-1", 4)
    body = await submit(m, experiment_yaml(slots=8), expect=400)
    assert "slots requested exceeds cluster capacity" in body["message"]
    body = await submit(m, experiment_yaml(pool="nope"), expect=400)
    assert "resource pool 'nope' does not exist" in body["message"]
