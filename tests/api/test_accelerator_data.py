"""POST /api/v1/allocations/{id}/acceleratorData (what `prep_container --resources` sends) and
GET /api/v1/tasks/{id}/acceleratorData, with the allocation-token auth of the other allocation
endpoints."""

from __future__ import annotations

from typing import Any

from tests.controlplane.services.scheduling.conftest import (
    add_agent,
    allocations_on,
    experiment_yaml,
    submit,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster

HEADER = "Grpc-Metadata-x-allocation-token"


def body(allocation_id: str, **data: Any) -> dict[str, Any]:
    """The request as determined 0.38.1's prep_container builds it (v1AcceleratorData)."""
    return {
        "allocationId": allocation_id,
        "acceleratorData": {
            "containerId": f"{allocation_id}-0",
            "acceleratorType": "cpu",
            "acceleratorUuids": [],
            "allocationId": allocation_id,
            "nodeName": "a1",
            "taskId": "whatever the container believes",
            **data,
        },
    }


async def running_allocation(m: LiveMaster, agents: list[FakeAgent]) -> tuple[str, str, str]:
    """(task id, allocation id, the allocation's token) of a trial a fake agent runs."""
    agent = await add_agent(m, agents, "a1", 1)
    await submit(m, experiment_yaml("acc"))
    (alloc,) = await allocations_on(agent)
    (start,) = [s for s in agent.started.values() if s.spec.allocation_id == alloc]
    return start.spec.task_id, alloc, start.spec.environment["DET_SESSION_TOKEN"]


async def test_a_container_reports_its_accelerators_and_the_task_lists_them(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    task_id, alloc, token = await running_allocation(m, agents)
    task = {HEADER: f"Bearer {token}"}

    r = await m.http.post(
        f"/api/v1/allocations/{alloc}/acceleratorData", json=body(alloc), headers=task
    )
    assert r.status_code == 200 and r.json() == {}
    gpus = body(alloc, acceleratorType="cuda", acceleratorUuids=["GPU-1", "GPU-2"])
    gpus["acceleratorData"]["containerId"] = f"{alloc}-1"
    r = await m.http.post(f"/api/v1/allocations/{alloc}/acceleratorData", json=gpus, headers=task)
    assert r.status_code == 200
    # A retried post replaces the container's earlier report.
    r = await m.http.post(
        f"/api/v1/allocations/{alloc}/acceleratorData", json=body(alloc), headers=task
    )
    assert r.status_code == 200

    listed = (await m.get(f"/api/v1/tasks/{task_id}/acceleratorData"))["acceleratorData"]
    assert listed == [
        {
            "containerId": f"{alloc}-0", "allocationId": alloc, "nodeName": "a1",
            "taskId": task_id, "acceleratorType": "cpu", "acceleratorUuids": [],
            "resourcePool": "default",
        },
        {
            "containerId": f"{alloc}-1", "allocationId": alloc, "nodeName": "a1",
            "taskId": task_id, "acceleratorType": "cuda", "acceleratorUuids": ["GPU-1", "GPU-2"],
            "resourcePool": "default",
        },
    ]  # fmt: skip
    # The task's own token may read it too (the CLI inside a task would).
    r = await m.http.get(f"/api/v1/tasks/{task_id}/acceleratorData", headers=task)
    assert r.status_code == 200 and len(r.json()["acceleratorData"]) == 2


async def test_unknown_allocations_and_wrong_tokens_are_refused(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    task_id, alloc, token = await running_allocation(m, agents)
    path = f"/api/v1/allocations/{alloc}/acceleratorData"

    # A task's token names only its own allocation: an unknown one is refused like any other's
    # (the token learns nothing of which exist); a user is told it does not exist.
    r = await m.http.post(
        "/api/v1/allocations/no-such.1/acceleratorData",
        json=body("no-such.1"),
        headers={HEADER: f"Bearer {token}"},
    )
    assert r.status_code == 403
    r = await m.http.post(
        "/api/v1/allocations/no-such.1/acceleratorData", json=body("no-such.1"), headers=m.admin
    )
    assert r.status_code == 404
    r = await m.http.post(path, json=body(alloc), headers={HEADER: "Bearer not-a-token"})
    assert r.status_code == 401
    r = await m.http.post(path, json=body(alloc))
    assert r.status_code == 401

    # Another allocation's token may not report for this one.
    other = await add_agent(m, agents, "a2", 1)
    await submit(m, experiment_yaml("other"))
    (other_alloc,) = await allocations_on(other)
    other_token = next(
        s.spec.environment["DET_SESSION_TOKEN"]
        for s in other.started.values()
        if s.spec.allocation_id == other_alloc
    )
    r = await m.http.post(path, json=body(alloc), headers={HEADER: f"Bearer {other_token}"})
    assert r.status_code == 403

    # A body without acceleratorData is not a report.
    r = await m.http.post(path, json={"allocationId": alloc}, headers={HEADER: f"Bearer {token}"})
    assert r.status_code == 400
    r = await m.http.get("/api/v1/tasks/no-such-task/acceleratorData", headers=m.admin)
    assert r.status_code == 404
    assert (await m.get(f"/api/v1/tasks/{task_id}/acceleratorData")) == {"acceleratorData": []}
