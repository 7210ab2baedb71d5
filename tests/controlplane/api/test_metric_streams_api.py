"""Determined's experiment metric streams through the API, on SQLite and PostgreSQL: what a
stream of an ended experiment sends (one message, then the end), with any metric group name,
and the refusals (unknown experiments, bad arguments, no login). A stream of a running
experiment keeps sending: tests/compat/test_determined_metric_streams.py reads one live."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_experiment_files_api import other_user, report

GRID = """name: g
entrypoint: python3 train.py
hyperparameters:
  lr:
    type: categorical
    vals: [0.1, 0.2, 0.3]
searcher:
  name: grid
  metric: loss
  max_length: 10
"""


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line)["result"] for line in text.splitlines() if line]


async def ended_experiment(m: Master) -> tuple[int, list[int]]:
    r = await m.client.post(
        "/api/v1/experiments", json={"config": GRID, "activate": False}, headers=m.user
    )
    assert r.status_code == 200, r.text
    exp_id = r.json()["experiment"]["id"]
    r = await m.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=m.user)
    trials = sorted(t["id"] for t in r.json()["trials"])
    assert len(trials) == 3
    for i, trial in enumerate(trials):
        for step in (1, 2):
            loss = 1.0 / (step + i)
            await report(m, trial, "training", step, {"loss": loss, "lr": 0.1})
            await report(m, trial, "validation", step * 5, {"loss": loss})
        await report(m, trial, "inf%er en/ce", 3, {"acc": float(i)})
    r = await m.client.post(f"/api/v1/experiments/{exp_id}/kill", headers=m.user)
    assert r.status_code == 200, r.text
    r = await m.client.get(f"/api/v1/experiments/{exp_id}", headers=m.user)
    assert r.json()["experiment"]["state"] in ("STATE_CANCELED", "STATE_COMPLETED")
    return exp_id, trials


class TestEndedExperiment:
    async def test_every_stream_sends_once_and_ends(self, master: Master) -> None:
        exp_id, trials = await ended_experiment(master)
        base = f"/api/v1/experiments/{exp_id}/metrics-stream"
        alice = await other_user(master)
        for who in (master.user, alice, master.admin):
            r = await master.client.get(
                "/api/v1/experiments/metrics-stream/metric-names",
                params={"ids": [exp_id], "periodSeconds": 1},
                headers=who,
            )
            assert r.status_code == 200, r.text
            [names] = lines(r.text)
            assert names["searcherMetrics"] == ["loss"]
            assert names["trainingMetrics"] == ["loss", "lr"]
            assert names["validationMetrics"] == ["loss"]
            assert {(n["group"], n["name"]) for n in names["metricNames"]} == {
                ("inf%er en/ce", "acc"),
                ("training", "loss"),
                ("training", "lr"),
                ("validation", "loss"),
            }

            r = await master.client.get(
                f"{base}/batches",
                params={"metricName": "loss", "metricType": "METRIC_TYPE_VALIDATION"},
                headers=who,
            )
            assert r.status_code == 200, r.text
            assert lines(r.text) == [{"batches": [5, 10]}]
            r = await master.client.get(
                f"{base}/batches",
                params={"metricName": "acc", "group": "inf%er en/ce"},
                headers=who,
            )
            assert lines(r.text) == [{"batches": [3]}]

            r = await master.client.get(
                f"{base}/trials-snapshot",
                params={
                    "metricName": "loss",
                    "metricType": "METRIC_TYPE_TRAINING",
                    "batchesProcessed": 2,
                },
                headers=who,
            )
            assert r.status_code == 200, r.text
            [snap] = lines(r.text)
            got = sorted((t["trialId"], t["batchesProcessed"], t["metric"]) for t in snap["trials"])
            assert got == [(trials[i], 2, 1.0 / (2 + i)) for i in range(3)]
            assert all(set(t["hparams"]) == {"lr"} for t in snap["trials"])

            r = await master.client.get(
                f"{base}/trials-sample",
                params={
                    "metricName": "loss",
                    "metricType": "METRIC_TYPE_VALIDATION",
                    "maxTrials": 2,
                },
                headers=who,
            )
            assert r.status_code == 200, r.text
            [sample] = lines(r.text)
            assert sample["demotedTrials"] == []
            # grid ranks by the searcher metric, smaller is better: the later trials lead
            assert sample["promotedTrials"] == [trials[2], trials[1]]
            first = sample["trials"][0]
            assert first["trialId"] == trials[2] and set(first["hparams"]) == {"lr"}
            assert [(p["batches"], p["values"]) for p in first["data"]] == [
                (5, {"loss": 1.0 / 3}),
                (10, {"loss": 1.0 / 4}),
            ]
            assert all(p["time"].endswith("Z") for p in first["data"])


class TestRefusals:
    async def test_bad_input(self, master: Master) -> None:
        exp_id, _ = await ended_experiment(master)
        c = master.client
        names = "/api/v1/experiments/metrics-stream/metric-names"
        base = f"/api/v1/experiments/{exp_id}/metrics-stream"
        assert (await c.get(names, params={"ids": [exp_id]})).status_code == 401
        assert (await c.get(f"{base}/batches", params={"metricName": "x"})).status_code == 401
        assert_error(await c.get(names, headers=master.user), 400, "at least one")
        assert_error(await c.get(names, params={"ids": [999999]}, headers=master.user), 404)
        r = await c.get(names, params={"ids": [2**40]}, headers=master.user)
        assert r.status_code == 400
        r = await c.get(names, params={"ids": list(range(1, 1100))}, headers=master.user)
        assert r.status_code == 400
        training = {"metricName": "loss", "metricType": "METRIC_TYPE_TRAINING"}
        for path, params, status, needle in (
            ("batches", {"metricName": "loss"}, 400, "metric group"),
            ("batches", {"metricType": "METRIC_TYPE_TRAINING"}, 400, ""),
            ("batches", {**training, "metricName": ""}, 400, ""),
            ("batches", {**training, "metricType": "BOGUS"}, 400, "metricType"),
            ("batches", {**training, "periodSeconds": -1}, 400, ""),
            ("trials-snapshot", training, 400, ""),  # batchesProcessed is required
            ("trials-snapshot", {**training, "batchesProcessed": 1, "batchesMargin": 101},
             400, "margin"),
            ("trials-sample", {**training, "maxTrials": -1}, 400, ""),
        ):  # fmt: skip
            r = await c.get(f"{base}/{path}", params=params, headers=master.user)
            assert_error(r, status, needle)
        r = await c.get(
            "/api/v1/experiments/999999/metrics-stream/batches",
            params=training,
            headers=master.user,
        )
        assert_error(r, 404)

    async def test_single_trial_experiments_are_not_sampled(self, master: Master) -> None:
        config = "name: s\nentrypoint: x\nsearcher:\n  name: single\n  metric: loss\n"
        r = await master.client.post(
            "/api/v1/experiments", json={"config": config, "activate": False}, headers=master.user
        )
        exp_id = r.json()["experiment"]["id"]
        r = await master.client.get(
            f"/api/v1/experiments/{exp_id}/metrics-stream/trials-sample",
            params={"metricName": "loss", "metricType": "METRIC_TYPE_TRAINING"},
            headers=master.user,
        )
        assert_error(r, 400, "single-trial")
