"""A workspace's slot quota on a live master (real HTTP and agent WebSocket, both databases):
the quota holds the workspace's second job back while the pool has room, the queue says why,
other workspaces' work goes on, and raising the quota lets the job start. A task's token may
not change quotas or bindings."""

from __future__ import annotations

from typing import Any

import pytest

from tests.controlplane.services.scheduling.conftest import StartMaster, add_agent, experiment_yaml
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually

pytestmark = pytest.mark.no_docker_engine  # it names docker, starts no container

HEADER = "Grpc-Metadata-x-allocation-token"


async def _jobs(m: LiveMaster) -> dict[str, dict[str, Any]]:
    body = await m.get("/api/v1/job-queues-v2")
    return {j["full"]["name"]: j["full"] for j in body["jobs"]}


async def _submit(m: LiveMaster, name: str, project: int | None, slots: int) -> Any:
    body: dict[str, Any] = {
        "config": experiment_yaml(name, slots=slots),
        "modelDefinition": [],
        "activate": True,
    }
    if project is not None:
        body["projectId"] = project
    return (await m.post("/api/v1/experiments", body))["experiment"]


async def test_a_quota_holds_the_second_job_back_and_the_queue_says_why(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 8)
    team = (await m.post("/api/v1/workspaces", {"name": "team"}))["workspace"]["id"]
    project = (await m.post(f"/api/v1/workspaces/{team}/projects", {"name": "p"}))["project"]["id"]
    r = await m.http.patch(
        f"/api/v1/workspaces/{team}", json={"slotQuotas": {"default": 4}}, headers=m.admin
    )
    assert r.status_code == 200, r.text

    await _submit(m, "first", project, 4)

    async def holding(count: int) -> bool:
        return len(agent.allocations()) == count

    await eventually(lambda: holding(1), timeout=10)
    await _submit(m, "second", project, 2)
    # Another workspace's job, submitted after it, starts: the pool has room.
    await _submit(m, "elsewhere", None, 2)
    await eventually(lambda: holding(2), timeout=10)

    async def second_waits() -> dict[str, Any] | None:
        jobs = await _jobs(m)
        second = jobs.get("second")
        if second is None or second["summary"]["state"] != "STATE_QUEUED":
            return None
        return second if second.get("waitReason") else None

    second = await eventually(second_waits, timeout=10)
    assert second["waitReason"] == "waiting: workspace quota 4 of 4 slots in use"
    jobs = await _jobs(m)
    assert jobs["elsewhere"]["summary"]["state"] == "STATE_SCHEDULED"
    assert len(agent.allocations()) == 2  # first and elsewhere: 6 of 8 slots

    # A task's token (here, a command of the admin's) cannot raise the quota or bind pools.
    r = await m.http.post(
        "/api/v1/commands",
        json={"config": {"entrypoint": ["sleep", "100"], "resources": {"slots": 0}}},
        headers=m.admin,
    )
    assert r.status_code == 200, r.text

    async def command_start() -> Any:
        starts = [s for s in agent.started.values() if s.spec.task_type == "COMMAND"]
        return starts[0] if starts else None

    command = await eventually(command_start, timeout=10)
    task = {HEADER: f"Bearer {command.spec.environment['DET_SESSION_TOKEN']}"}
    r = await m.http.patch(
        f"/api/v1/workspaces/{team}", json={"slotQuotas": {"default": 8}}, headers=task
    )
    assert r.status_code == 403, r.text
    body = {"resourcePoolName": "default", "workspaceIds": [team]}
    for verb in ("POST", "PUT", "DELETE"):
        r = await m.http.request(
            verb, "/api/v1/resource-pools/default/workspace-bindings", json=body, headers=task
        )
        assert r.status_code == 403, r.text
    assert (await _jobs(m))["second"]["summary"]["state"] == "STATE_QUEUED"

    # The admin raises the quota: the held job starts on the next pass.
    r = await m.http.patch(
        f"/api/v1/workspaces/{team}", json={"slotQuotas": {"default": 6}}, headers=m.admin
    )
    assert r.status_code == 200, r.text
    await eventually(lambda: holding(4), timeout=10)  # first, elsewhere, command, second
    assert (await _jobs(m))["second"]["summary"]["state"] == "STATE_SCHEDULED"
