"""Determined's older GetJobs (`GET /api/v1/job-queues`) and the per-pool queue counts
(`GET /api/v1/job-queues/stats`) beside GetJobsV2; bad pools and states are a 400."""

from __future__ import annotations

from tests.conftest import Master
from tests.controlplane.services.scheduling.conftest import experiment_yaml


async def test_jobs_and_stats(master: Master) -> None:
    for name in ("a", "b"):
        r = await master.client.post(
            "/api/v1/experiments", headers=master.user, json={"config": experiment_yaml(name)}
        )
        assert r.status_code == 200, r.text
    r = await master.client.get("/api/v1/job-queues-v2", headers=master.user)
    v2 = [j["full"] for j in r.json()["jobs"]]
    r = await master.client.get("/api/v1/job-queues", headers=master.user)
    assert r.status_code == 200, r.text
    v1 = r.json()["jobs"]
    assert [j["jobId"] for j in v1] == [j["jobId"] for j in v2] and len(v1) == 2
    assert r.json()["pagination"]["total"] == 2
    r = await master.client.get(
        "/api/v1/job-queues", headers=master.user, params={"orderBy": "ORDER_BY_DESC", "limit": 1}
    )
    assert [j["jobId"] for j in r.json()["jobs"]] == [v2[-1]["jobId"]]

    r = await master.client.get("/api/v1/job-queues/stats", headers=master.user)
    assert r.status_code == 200, r.text
    (pool,) = r.json()["results"]
    # no agents: both wait
    assert pool["stats"] == {"queuedCount": 2, "scheduledCount": 0}
    r = await master.client.get(
        "/api/v1/job-queues/stats",
        headers=master.user,
        params={"resourcePools": [pool["resourcePool"]]},
    )
    assert r.json()["results"][0]["resourcePool"] == pool["resourcePool"]

    for path, params in (
        ("/api/v1/job-queues/stats", {"resourcePools": ["nope"]}),
        ("/api/v1/job-queues", {"resourcePool": "nope"}),
        ("/api/v1/job-queues", {"states": ["STATE_BOGUS"]}),
    ):
        r = await master.client.get(path, headers=master.user, params=params)
        assert r.status_code == 400, (path, r.text)
    assert (await master.client.get("/api/v1/job-queues")).status_code == 401
