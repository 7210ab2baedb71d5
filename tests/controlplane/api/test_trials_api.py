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


async def _workloads(master: Master, trial_id: int) -> list[tuple[str, int]]:
    r = await master.client.get(f"/api/v1/trials/{trial_id}/workloads", headers=master.user)
    out = []
    for w in r.json()["workloads"]:
        kind = next(k for k in ("training", "validation") if w.get(k))
        out.append((kind, w[kind]["totalBatches"]))
    return out


async def test_a_batch_stores_each_report_once_even_when_retried(master: Master) -> None:
    t = await _trial(master)
    url = f"/api/v1/trials/{t['id']}/metrics/batch"
    batch = {
        "reports": [
            report("training", 10, {"loss": 0.9}),
            report("training", 20, {"loss": 0.7}),
            report("training", 20, {"loss": 0.1}),  # the same key twice: the first is kept
            report("validation", 20, {"loss": 0.3}),
        ]
    }
    for _ in range(2):  # a retried batch stores nothing twice
        r = await master.client.post(url, json=batch, headers=master.user)
        assert r.status_code == 200, r.text
    assert sorted(await _workloads(master, t["id"])) == [
        ("training", 10),
        ("training", 20),
        ("validation", 20),
    ]
    r = await master.client.get(f"/api/v1/trials/{t['id']}/workloads", headers=master.user)
    losses = {
        w["training"]["totalBatches"]: w["training"]["metrics"]["avgMetrics"]["loss"]
        for w in r.json()["workloads"]
        if w.get("training")
    }
    assert losses == {10: 0.9, 20: 0.7}
    trial = (await master.client.get(f"/api/v1/trials/{t['id']}", headers=master.user)).json()
    assert trial["trial"]["totalBatchesProcessed"] == 20
    assert trial["trial"]["bestValidation"]["totalBatches"] == 20


async def test_groups_of_any_name_are_stored_and_read_back_by_url(master: Master) -> None:
    """Determined's core_api/11_generic_metrics groups and metric names, through the URL."""
    t = await _trial(master)
    groups = ["group_b", "grou%p_c", "infer ence", "inf%er en/ce"]
    for steps, group in enumerate(groups, start=1):
        metrics = {f"z{group}/me.t r%i]\\c_{i}": steps * (i + 1) for i in range(3)}
        r = await master.client.post(
            f"/api/v1/trials/{t['id']}/metrics", json=report(group, steps, metrics),
            headers=master.user,
        )  # fmt: skip
        assert r.status_code == 200, (group, r.text)
    for steps, group in enumerate(groups, start=1):
        r = await master.client.get(
            "/api/v1/trials/metrics/trial_metrics",
            params={"trialIds": t["id"], "group": group}, headers=master.user,
        )  # fmt: skip
        assert r.status_code == 200, r.text
        (line,) = [json.loads(x) for x in r.text.splitlines() if x.strip()]
        (got,) = line["result"]["metrics"]
        assert got["group"] == group and got["totalBatches"] == steps
        assert got["metrics"]["avg_metrics"][f"z{group}/me.t r%i]\\c_2"] == steps * 3
    for bad in ("a.b", "nul\x00", "line\n", "x" * 129):
        r = await master.client.post(
            f"/api/v1/trials/{t['id']}/metrics", json=report(bad, 9, {"x": 1}),
            headers=master.user,
        )  # fmt: skip
        assert r.status_code == 400 and "group" in r.json()["message"], bad


async def test_a_bad_report_refuses_the_whole_batch_and_names_it(master: Master) -> None:
    t = await _trial(master)
    url = f"/api/v1/trials/{t['id']}/metrics/batch"
    bad_batches = {
        "reports[1]: invalid metric group": [report("training", 1, {}), report("a.b", 2, {})],
        "reports[0]: metrics.trialId": [
            {
                "group": "training",
                "metrics": {"trialId": 999999, "stepsCompleted": 1, "metrics": {"avgMetrics": {}}},
            },
        ],
        "reports[1]: metrics.metrics.avgMetrics": [
            report("training", 1, {}),
            {"group": "training", "metrics": {"stepsCompleted": 2, "metrics": {"avgMetrics": 3}}},
        ],
    }
    for message, reports in bad_batches.items():
        r = await master.client.post(url, json={"reports": reports}, headers=master.user)
        assert r.status_code == 400 and message in r.json()["message"], (message, r.text)
    too_many = {"reports": [report("training", i, {"x": 1}) for i in range(1001)]}
    r = await master.client.post(url, json=too_many, headers=master.user)
    assert r.status_code == 400
    assert await _workloads(master, t["id"]) == []  # nothing of a refused batch is stored
    r = await master.client.post(
        "/api/v1/trials/999999/metrics/batch",
        json={"reports": [report("training", 1, {})]},
        headers=master.user,
    )
    assert r.status_code == 404
    r = await master.client.post(url, json={"reports": []})
    assert r.status_code == 401


async def test_determineds_older_training_and_validation_routes(master: Master) -> None:
    """ReportTrialTrainingMetrics and ReportTrialValidationMetrics store what POST …/metrics
    stores under the training and validation groups."""
    t = await _trial(master)
    body = {"trialRunId": 1, "stepsCompleted": 5, "metrics": {"avgMetrics": {"loss": 0.5}}}
    for kind in ("training", "validation"):
        r = await master.client.post(
            f"/api/v1/trials/{t['id']}/{kind}_metrics",
            json={f"{kind}Metrics": body},
            headers=master.user,
        )
        assert r.status_code == 200, r.text
    trial = (await master.client.get(f"/api/v1/trials/{t['id']}", headers=master.user)).json()
    assert trial["trial"]["latestValidation"]["metrics"]["avgMetrics"] == {"loss": 0.5}
    r = await master.client.post(
        f"/api/v1/trials/{t['id']}/training_metrics", json={"metrics": body}, headers=master.user
    )
    assert r.status_code == 400
    r = await master.client.post(
        f"/api/v1/trials/{t['id']}/training_metrics", json={"trainingMetrics": body},
        headers=master.admin | {"Authorization": "Bearer nope"},
    )  # fmt: skip
    assert r.status_code == 401
