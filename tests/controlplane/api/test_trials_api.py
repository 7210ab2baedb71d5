"""Trial reads, metric reports and log streams through the API."""

from __future__ import annotations

import json

from tests.conftest import Master
from tests.controlplane.api.test_smoke_flow import CONFIG


async def _trial(master: Master) -> dict:
    exp = (
        await master.client.post(
            "/api/v1/experiments", json={"config": CONFIG}, headers=master.user
        )
    ).json()["experiment"]
    r = await master.client.get(f"/api/v1/experiments/{exp['id']}/trials", headers=master.user)
    return r.json()["trials"][0]


def report(group: str, steps: int, metrics: dict, run: int = 1) -> dict:
    return {
        "group": group,
        "metrics": {"trialRunId": run, "stepsCompleted": steps, "metrics": {"avgMetrics": metrics}},
    }


async def test_best_and_latest_validation(master: Master) -> None:
    t = await _trial(master)
    url = f"/api/v1/trials/{t['id']}/metrics"
    for steps, loss in ((10, 0.5), (20, 0.2), (30, 0.4)):
        r = await master.client.post(
            url, json=report("validation", steps, {"loss": loss}), headers=master.user
        )
        assert r.status_code == 200
    body = (await master.client.get(f"/api/v1/trials/{t['id']}", headers=master.user)).json()
    trial = body["trial"]
    assert trial["bestValidation"]["totalBatches"] == 20
    assert trial["latestValidation"]["totalBatches"] == 30
    assert trial["totalBatchesProcessed"] == 30


async def test_non_finite_and_custom_groups(master: Master) -> None:
    t = await _trial(master)
    url = f"/api/v1/trials/{t['id']}/metrics"
    r = await master.client.post(
        url, json=report("inference", 1, {"x": "NaN", "y": "Infinity"}), headers=master.user
    )
    assert r.status_code == 200
    for bad in ("a.b", "", "x" * 200):
        r = await master.client.post(url, json=report(bad, 1, {"x": 1}), headers=master.user)
        assert r.status_code == 400, bad
    r = await master.client.post(
        url,
        json={
            "group": "training",
            "metrics": {"stepsCompleted": 1, "metrics": {"avgMetrics": [1, 2]}},
        },
        headers=master.user,
    )
    assert r.status_code == 400 and "avgMetrics" in r.json()["message"]


async def test_log_tail_is_newest_first_and_follow_ends_with_the_trial(master: Master) -> None:
    t = await _trial(master)
    lines = [{"taskId": t["taskId"], "log": f"line {i}\n"} for i in range(1, 4)]
    r = await master.client.post("/api/v1/task/logs", json={"logs": lines}, headers=master.user)
    assert r.status_code == 200
    r = await master.client.get(
        f"/api/v1/trials/{t['id']}/logs",
        params={"limit": 2, "orderBy": "ORDER_BY_DESC"},
        headers=master.user,
    )
    got = [json.loads(line)["result"]["message"] for line in r.text.splitlines()]
    assert got == ["line 3\n", "line 2\n"]
    # follow on an ended trial drains what is there, then ends
    await master.client.post(f"/api/v1/experiments/{t['experimentId']}/kill", headers=master.user)
    r = await master.client.get(
        f"/api/v1/trials/{t['id']}/logs", params={"follow": "true"}, headers=master.user
    )
    assert [json.loads(x)["result"]["message"] for x in r.text.splitlines()] == [
        "line 1\n",
        "line 2\n",
        "line 3\n",
    ]


async def test_other_users_cannot_write_logs_or_metrics(master: Master) -> None:
    t = await _trial(master)  # owned by `determined`
    r = await master.client.post(
        f"/api/v1/trials/{t['id']}/metrics",
        json=report("training", 1, {"x": 1}),
        headers=master.admin,
    )
    assert r.status_code == 200  # admins may
    body = {"logs": [{"taskId": "no-such-task", "log": "x"}]}
    r = await master.client.post("/api/v1/task/logs", json=body, headers=master.user)
    assert r.status_code == 404
