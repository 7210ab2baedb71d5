"""The job queue API: order, states, why jobs wait, and the changes users make to it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    experiment_yaml,
    submit,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually

pytestmark = pytest.mark.no_docker_engine  # it names docker, starts no container

# The fields bindings.v1ResourcePool.from_json requires (determined 0.38.1).
V1_RESOURCE_POOL_REQUIRED = {
    "agentDockerImage", "agentDockerNetwork", "agentDockerRuntime", "agentFluentImage",
    "auxContainerCapacity", "auxContainerCapacityPerAgent", "auxContainersRunning",
    "clusterName", "containerStartupScript", "defaultAuxPool", "defaultComputePool",
    "description", "details", "imageId", "instanceType", "location", "masterCertName",
    "masterUrl", "maxAgentStartingPeriod", "maxAgents", "maxIdleAgentPeriod", "minAgents",
    "name", "numAgents", "preemptible", "resourceManagerMetadata", "schedulerFittingPolicy",
    "schedulerType", "slotType", "slotsAvailable", "slotsUsed", "startupScript", "type",
}  # fmt: skip


async def _jobs(m: LiveMaster, **params: Any) -> list[dict[str, Any]]:
    body = await m.get("/api/v1/job-queues-v2", params=params)
    return [j["full"] for j in body["jobs"]]


async def _queue_settled(m: LiveMaster, count: int) -> list[dict[str, Any]]:
    async def ready() -> list[dict[str, Any]]:
        jobs = await _jobs(m)
        return jobs if len(jobs) == count else []

    return await eventually(ready, timeout=5)


async def test_queue_order_states_and_reasons(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    a = (await submit(m, experiment_yaml("a", priority=50)))["experiment"]

    async def running() -> set[str]:
        return agent.allocations()

    await eventually(running, timeout=5)
    b = (await submit(m, experiment_yaml("b", priority=50)))["experiment"]
    c = (await submit(m, experiment_yaml("c", priority=40)))["experiment"]
    jobs = await _queue_settled(m, 3)
    by_name = {j["name"]: j for j in jobs}
    assert [j["name"] for j in jobs] == ["c", "a", "b"]
    assert [j["summary"]["jobsAhead"] for j in jobs] == [0, 1, 2]
    assert by_name["a"]["summary"]["state"] == "STATE_SCHEDULED"
    assert by_name["a"]["allocatedSlots"] == 1 and by_name["a"]["requestedSlots"] == 1
    assert by_name["c"]["summary"]["state"] == "STATE_QUEUED"
    assert by_name["c"]["waitReason"]  # e.g. "waiting: 1 slot requested, ..."
    assert by_name["b"]["entityId"] == str(b["id"]) and by_name["a"]["type"] == "TYPE_EXPERIMENT"
    assert by_name["c"]["jobId"] == c["jobId"] and a["jobId"] == by_name["a"]["jobId"]

    queued = await _jobs(m, states=["STATE_QUEUED"])
    assert {j["name"] for j in queued} == {"b", "c"}
    reverse = await _jobs(m, orderBy="ORDER_BY_DESC")
    assert [j["name"] for j in reverse] == ["b", "a", "c"]

    pools = (await m.get("/api/v1/resource-pools"))["resourcePools"]
    (pool,) = pools
    assert set(pool) >= V1_RESOURCE_POOL_REQUIRED
    assert pool["name"] == "default" and pool["defaultComputePool"] is True
    assert pool["schedulerType"] == "SCHEDULER_TYPE_PRIORITY"
    assert pool["numAgents"] == 1 and pool["slotsUsed"] == 1
    assert pool["stats"] == {"queuedCount": 2, "scheduledCount": 1}
    assert pool["details"]["priorityScheduler"] == {"preemption": False, "defaultPriority": 42}


async def test_moving_a_job_ahead_changes_who_starts_next(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    await submit(m, experiment_yaml("a"))

    async def running() -> set[str]:
        return agent.allocations()

    await eventually(running, timeout=5)
    await submit(m, experiment_yaml("b"))
    c = (await submit(m, experiment_yaml("c")))["experiment"]
    jobs = await _queue_settled(m, 3)
    b_job = next(j for j in jobs if j["name"] == "b")
    assert [j["name"] for j in jobs] == ["a", "b", "c"]

    await m.post(
        "/api/v1/job-queues", {"updates": [{"jobId": c["jobId"], "aheadOf": b_job["jobId"]}]}
    )

    async def reordered() -> bool:
        return [j["name"] for j in await _jobs(m)] == ["a", "c", "b"]

    await eventually(reordered, timeout=5)
    await agent.exit(next(iter(agent.started)), 0)

    async def c_started() -> bool:
        return any(s.spec.task_id.startswith(f"{c['id']}.") for s in agent.started.values())

    await eventually(c_started, timeout=5)

    # behindOf puts it back; a priority change re-sorts and resets the position.
    await m.post("/api/v1/job-queues", {"updates": [{"jobId": b_job["jobId"], "priority": 10}]})

    async def b_first() -> bool:
        return (await _jobs(m))[0]["name"] == "b"

    await eventually(b_first, timeout=5)


async def test_experiment_set_priority_takes_effect_next_pass(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    await submit(m, experiment_yaml("a"))

    async def running() -> set[str]:
        return agent.allocations()

    await eventually(running, timeout=5)
    await submit(m, experiment_yaml("b"))
    c = (await submit(m, experiment_yaml("c")))["experiment"]
    await _queue_settled(m, 3)
    r = await m.http.patch(
        f"/api/v1/experiments/{c['id']}", json={"resources": {"priority": 5}}, headers=m.admin
    )
    assert r.status_code == 200, r.text

    async def c_first() -> bool:
        jobs = await _jobs(m)
        return jobs[0]["name"] == "c" and jobs[0]["priority"] == 5

    await eventually(c_first, timeout=5)


async def test_bad_queue_updates_are_refused_and_change_nothing(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    await add_agent(m, agents, "a1", 1)
    a = (await submit(m, experiment_yaml("a")))["experiment"]
    b = (await submit(m, experiment_yaml("b")))["experiment"]
    await _queue_settled(m, 2)
    before = await _jobs(m)
    cases = [
        ({"jobId": "nope", "priority": 3}, 404),
        ({"jobId": a["jobId"], "priority": 0}, 400),
        ({"jobId": a["jobId"], "priority": 100}, 400),
        ({"jobId": a["jobId"], "weight": 0}, 400),
        ({"jobId": a["jobId"], "resourcePool": "nope"}, 400),
        ({"jobId": a["jobId"], "aheadOf": b["jobId"], "behindOf": b["jobId"]}, 400),
        ({"jobId": a["jobId"], "aheadOf": a["jobId"]}, 400),
        ({"jobId": a["jobId"], "aheadOf": "missing"}, 404),
        ({"jobId": a["jobId"], "priority": "high"}, 400),
    ]
    for update, status in cases:
        await m.post("/api/v1/job-queues", {"updates": [update]}, expect=status)
    # All or nothing: a valid change next to a bad one is not applied either.
    await m.post(
        "/api/v1/job-queues",
        {"updates": [{"jobId": b["jobId"], "priority": 1}, {"jobId": "nope", "priority": 1}]},
        expect=404,
    )
    # Only the owner or an admin may reorder.
    user = await m.login("determined", PASSWORD)
    r = await m.http.post(
        "/api/v1/job-queues",
        json={"updates": [{"jobId": a["jobId"], "priority": 1}]},
        headers=user,
    )
    assert r.status_code == 403
    r = await m.http.get("/api/v1/job-queues-v2", params={"resourcePool": "nope"}, headers=m.admin)
    assert r.status_code == 400
    assert await _jobs(m) == before


async def test_fair_share_pool_reports_no_order_and_takes_weights(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(resource_manager={"scheduler": {"type": "fair_share"}})
    await add_agent(m, agents, "a1", 1)
    a = (await submit(m, experiment_yaml("a")))["experiment"]
    await submit(m, experiment_yaml("b"))
    jobs = await _queue_settled(m, 2)
    assert {j["summary"]["jobsAhead"] for j in jobs} == {-1}
    assert all(j["isPreemptible"] for j in jobs)
    await m.post("/api/v1/job-queues", {"updates": [{"jobId": a["jobId"], "weight": 3}]})

    async def weighted() -> bool:
        return any(j["weight"] == 3 for j in await _jobs(m))

    await eventually(weighted, timeout=5)
    pool = (await m.get("/api/v1/resource-pools"))["resourcePools"][0]
    assert pool["schedulerType"] == "SCHEDULER_TYPE_FAIR_SHARE"
