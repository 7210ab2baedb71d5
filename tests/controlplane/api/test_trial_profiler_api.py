"""Determined's profiler routes over what a trial's profiler reported (the harness's reports, as
the metric groups gpu/cpu/memory/disk/network), on SQLite and PostgreSQL: the series' labels,
their values, filters, and bad input."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error

EXP = "name: prof\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n"


async def trial_of_new_experiment(m: Master) -> int:
    r = await m.client.post(
        "/api/v1/experiments", json={"config": EXP, "activate": False}, headers=m.user
    )
    assert r.status_code == 200, r.text
    exp_id = r.json()["experiment"]["id"]
    r = await m.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=m.user)
    return int(r.json()["trials"][0]["id"])


async def report(m: Master, trial_id: int, group: str, steps: int, avg: dict[str, Any]) -> None:
    # The body harness.core._profiler sends through TrainContext.
    body = {
        "group": group,
        "metrics": {
            "trialId": trial_id,
            "trialRunId": 0,
            "stepsCompleted": steps,
            "reportTime": None,
            "metrics": {"avgMetrics": avg, "batchMetrics": None},
        },
    }
    r = await m.client.post(f"/api/v1/trials/{trial_id}/metrics", json=body, headers=m.user)
    assert r.status_code == 200, r.text


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line)["result"] for line in text.splitlines() if line]


async def test_series_and_values(master: Master) -> None:
    trial = await trial_of_new_experiment(master)
    await report(master, trial, "cpu", 1, {"agent-1": {"cpu_util_simple": 12.5}})
    await report(master, trial, "cpu", 2, {"agent-1": {"cpu_util_simple": 37.5}})
    gpu = {"agent-1": {"GPU-0": {"gpu_util": 99.0, "gpu_free_memory": 2048.0}}}
    await report(master, trial, "gpu", 1, gpu)
    await report(master, trial, "training", 1, {"loss": 1.0})

    base = f"/api/v1/trials/{trial}/profiler"
    r = await master.client.get(f"{base}/available_series", headers=master.user)
    assert r.status_code == 200, r.text
    [answer] = lines(r.text)
    names = {(lab["name"], lab.get("gpuUuid")) for lab in answer["labels"]}
    assert names == {("cpu_util_simple", None), ("gpu_util", "GPU-0"), ("gpu_free_memory", "GPU-0")}
    assert {lab["metricType"] for lab in answer["labels"]} == {"PROFILER_METRIC_TYPE_SYSTEM"}

    r = await master.client.get(
        f"{base}/metrics",
        params={"labels.name": "cpu_util_simple", "labels.agentId": "agent-1", "follow": "false"},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    [one] = lines(r.text)
    assert one["batch"]["values"] == [12.5, 37.5] and one["batch"]["batches"] == [1, 2]
    assert len(one["batch"]["timestamps"]) == 2
    assert one["batch"]["labels"]["name"] == "cpu_util_simple"

    r = await master.client.get(
        f"{base}/metrics", params={"labels.gpuUuid": "GPU-0"}, headers=master.admin
    )
    assert sorted(b["batch"]["labels"]["name"] for b in lines(r.text)) == [
        "gpu_free_memory",
        "gpu_util",
    ]


async def test_bad_input(master: Master) -> None:
    trial = await trial_of_new_experiment(master)
    base = f"/api/v1/trials/{trial}/profiler"
    r = await master.client.get(
        f"{base}/metrics",
        params={"labels.metricType": "PROFILER_METRIC_TYPE_TIMING"},
        headers=master.user,
    )
    assert_error(r, 400, "PROFILER_METRIC_TYPE_SYSTEM")
    r = await master.client.get(
        f"{base}/metrics", params={"labels.name": "x" * 300}, headers=master.user
    )
    assert r.status_code == 400
    assert_error(
        await master.client.get("/api/v1/trials/999999/profiler/metrics", headers=master.user),
        404,
    )
    r = await master.client.get(
        f"/api/v1/trials/{2**40}/profiler/available_series", headers=master.user
    )
    assert r.status_code in (400, 404)
    assert (await master.client.get(f"{base}/available_series")).status_code == 401
    r = await master.client.get(f"{base}/available_series", headers=master.user)
    assert lines(r.text) == [{"labels": []}]
