"""The allocation endpoints the real determined package calls from inside a task:
AllocationAllGather and NotifyContainerRunning (everyone waits for everyone), GetAllocation,
and AllocationPendingPreemptionSignal (the trial is asked to stop as a preemption). A task's
token works only for its own allocation; other users get 403."""

from __future__ import annotations

import asyncio

from tests.api.test_task_tokens import _world, headers_of
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import StartMaster


async def test_gathers_and_allocation_reads(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    w = await _world(m, agents)
    alloc = w.trial.spec.allocation_id
    task = headers_of(w.trial)
    url = f"/api/v1/allocations/{alloc}/all_gather"

    async def join(rank: int, uuid: str) -> list[dict[str, object]]:
        body = {"allocationId": alloc, "requestUuid": uuid, "numPeers": 2,
                "data": {"rank": rank, "rendezvous_ip": f"10.0.0.{rank}", "slots": 1}}  # fmt: skip
        r = await m.http.post(url, json=body, headers=task)
        assert r.status_code == 200, r.text
        return r.json()["data"]

    first, second = await asyncio.gather(join(0, "u0"), join(1, "u1"))
    assert first == second and [d["rank"] for d in first] in ([0, 1], [1, 0])
    assert await join(0, "u0") == first  # a retry gets the same answer

    running = f"/api/v1/allocations/{alloc}/notify_container_running"
    body = {"allocationId": alloc, "requestUuid": "n0", "numPeers": 1, "rank": 0, "data": {}}
    r = await m.http.post(running, json=body, headers=task)
    assert r.status_code == 200 and r.json()["data"] == [{}]

    r = await m.http.get(f"/api/v1/allocations/{alloc}", headers=task)
    assert r.status_code == 200, r.text
    got = r.json()["allocation"]
    assert got["allocationId"] == alloc and got["state"].startswith("STATE_")

    # another trial's token, another user: refused
    other = headers_of(w.other)
    assert (await m.http.get(f"/api/v1/allocations/{alloc}", headers=other)).status_code == 403
    assert (await m.http.post(url, json={"data": {}}, headers=other)).status_code == 403
    assert (await m.http.get(f"/api/v1/allocations/{alloc}", headers=w.alice)).status_code == 403
    r = await m.http.get("/api/v1/allocations/nope", headers=m.admin)
    assert r.status_code == 404
    for bad in ({"data": {}, "numPeers": 0}, {"data": {}, "allocationId": "x"}, {}, {"data": 5}):
        r = await m.http.post(url, json=bad, headers=task)
        assert r.status_code == 400, (bad, r.text)

    r = await m.http.post(
        f"/api/v1/allocations/{alloc}/signals/pending_preemption",
        json={"allocationId": alloc},
        headers=task,
    )
    assert r.status_code == 200, r.text
    r = await m.http.get(f"/api/v1/allocations/{alloc}/signals/preemption", headers=task)
    assert r.json()["preempt"] is True
