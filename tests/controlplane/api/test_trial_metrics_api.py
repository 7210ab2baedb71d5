"""Determined's metric streams (GetMetrics, GetTrainingMetrics, GetValidationMetrics) through the
API, on both databases: NDJSON `{"result": {"metrics": [...]}}` lines of live reports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controlplane.api import trial_metrics
from controlplane.db.models import Trial
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services import trials
from controlplane.services.auth import client_hash
from tests.conftest import Master
from tests.controlplane.api.test_trials_api import report

URL = "/api/v1/trials/metrics/trial_metrics"
TWO_TRIALS = """\
name: two
entrypoint: python3 train.py
searcher: {name: random, metric: loss, max_trials: 2, max_length: 10}
hyperparameters: {lr: {type: double, minval: 0.1, maxval: 1.0}}
resources: {slots_per_trial: 1}
"""
# v1MetricsReport: every field the real bindings' from_json indexes.
FIELDS = {"trialId", "endTime", "metrics", "totalBatches", "archived", "id", "trialRunId", "group"}


async def _trials(master: Master, config: str = TWO_TRIALS) -> list[int]:
    r = await master.client.post(
        "/api/v1/experiments", json={"config": config}, headers=master.user
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]
    r = await master.client.get(f"/api/v1/experiments/{exp['id']}/trials", headers=master.user)
    return sorted(t["id"] for t in r.json()["trials"])


async def _report(master: Master, trial_id: int, *reports: dict[str, Any]) -> None:
    r = await master.client.post(
        f"/api/v1/trials/{trial_id}/metrics/batch",
        json={"reports": list(reports)},
        headers=master.user,
    )
    assert r.status_code == 200, r.text


async def _lines(master: Master, path: str, **params: Any) -> list[list[dict[str, Any]]]:
    r = await master.client.get(path, params=params, headers=master.user)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line)["result"]["metrics"] for line in r.text.splitlines()]


async def test_a_generic_group_streams_its_live_reports_in_step_order(master: Master) -> None:
    t, _ = await _trials(master)
    await _report(
        master,
        t,
        report("inference", 30, {"acc": 0.9}),
        report("inference", 10, {"acc": 0.5}),
        report("training", 10, {"loss": 1.0}),
        report("inference", 20, {"acc": "NaN"}),
    )
    lines = await _lines(master, URL, trialIds=t, group="inference")
    assert len(lines) == 1  # one batch
    got = lines[0]
    assert [m["totalBatches"] for m in got] == [10, 20, 30]
    assert [m["metrics"] for m in got] == [
        {"avg_metrics": {"acc": 0.5}},
        {"avg_metrics": {"acc": "NaN"}},
        {"avg_metrics": {"acc": 0.9}},
    ]
    first = got[0]
    assert set(first) == FIELDS
    assert first["trialId"] == t and first["group"] == "inference"
    assert first["archived"] is False and first["trialRunId"] == 1
    assert isinstance(first["id"], int)  # int32 on the wire: a number, not a string
    assert first["endTime"].endswith("Z") and len(first["endTime"]) == len(
        "2026-01-01T00:00:00.000Z"
    )
    # a group nobody reported: an empty stream
    assert await _lines(master, URL, trialIds=t, group="other") == []


async def test_training_and_validation_have_their_own_routes(master: Master) -> None:
    t, _ = await _trials(master)
    batch = [{"loss": 0.5}, {"loss": 0.4}]
    await _report(
        master,
        t,
        {
            "group": "training",
            "metrics": {
                "trialRunId": 1,
                "stepsCompleted": 5,
                "metrics": {"avgMetrics": {"loss": 0.45}, "batchMetrics": batch},
            },
        },
        report("validation", 5, {"loss": 0.3}),
    )
    training = await _lines(master, "/api/v1/trials/metrics/training_metrics", trialIds=t)
    assert [m["metrics"] for m in training[0]] == [
        {"avg_metrics": {"loss": 0.45}, "batch_metrics": batch}
    ]
    assert training[0][0]["group"] == "training"
    validation = await _lines(master, "/api/v1/trials/metrics/validation_metrics", trialIds=t)
    # as Determined stores (and its client reads) a validation: under validation_metrics
    assert [m["metrics"] for m in validation[0]] == [{"validation_metrics": {"loss": 0.3}}]
    assert validation == await _lines(master, URL, trialIds=t, group="validation")
    assert training == await _lines(master, URL, trialIds=t, group="training")


async def test_archived_reports_are_left_out(master: Master, db_url: str) -> None:
    t, _ = await _trials(master)
    await _report(master, t, *(report("inference", s, {"x": s}) for s in (10, 20, 30)))
    engine = make_engine(db_url)  # the app's engine belongs to the app's event loop
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            # a new run resumes from step 15: what was reported past it is archived
            trial = await session.get(Trial, t)
            assert trial is not None
            assert await trials.archive_abandoned_metrics(session, trial, resume_step=15, config={})
    finally:
        await engine.dispose()
    await _report(master, t, report("inference", 20, {"x": 200}, run=2))
    lines = await _lines(master, URL, trialIds=t, group="inference")
    assert [
        (m["totalBatches"], m["metrics"]["avg_metrics"]["x"], m["trialRunId"]) for m in lines[0]
    ] == [
        (10, 10, 1),
        (20, 200, 2),
    ]


async def test_several_trials_each_in_its_own_lines_in_id_order(
    master: Master, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trial_metrics, "BATCH", 2)
    t1, t2 = await _trials(master)
    await _report(master, t1, *(report("inference", s, {"x": s}) for s in (1, 2, 3)))
    # two live reports at one step (two runs): the page boundary loses neither
    await _report(
        master,
        t2,
        report("inference", 7, {"x": 7}),
        report("inference", 8, {"x": 8}, run=1),
        report("inference", 8, {"x": 80}, run=2),
    )
    lines = await _lines(master, URL, trialIds=[t2, t1, t2], group="inference")
    assert [[(m["trialId"], m["metrics"]["avg_metrics"]["x"]) for m in line] for line in lines] == [
        [(t1, 1), (t1, 2)],
        [(t1, 3)],
        [(t2, 7), (t2, 8)],
        [(t2, 80)],
    ]


async def test_unknown_trials_and_bad_requests(master: Master) -> None:
    t, _ = await _trials(master)
    r = await master.client.get(
        URL, params={"trialIds": [t, 99999], "group": "x"}, headers=master.user
    )
    assert r.status_code == 404
    assert r.json() == {
        "code": 5,
        "message": "trial 99999 not found",
        "error": {"error": "trial 99999 not found"},
        "details": [],
    }
    r = await master.client.get(
        "/api/v1/trials/metrics/validation_metrics", params={"trialIds": 99998}, headers=master.user
    )
    assert r.status_code == 404 and r.json()["message"] == "trial 99998 not found"
    for params in (
        {"group": "x"},  # no trial
        {"trialIds": t, "group": "a.b"},  # not a group name
        {"trialIds": t, "group": "x" * 200},
        {"trialIds": 2**40, "group": "x"},  # beyond int32
        {"trialIds": t},  # no group
    ):
        r = await master.client.get(URL, params=params, headers=master.user)
        assert r.status_code == 400, (params, r.text)
        assert r.json()["code"] == 3


async def test_who_may_read(master: Master) -> None:
    t, _ = await _trials(master)  # the `determined` user's
    await _report(master, t, report("inference", 1, {"x": 1}))
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        r = await master.client.get(
            URL, params={"trialIds": t, "group": "inference"}, headers=headers
        )
        assert r.status_code == 401, r.text
    # Every logged-in user may read every trial (GET /trials/{id} answers the admin and any
    # other user alike); the streams answer as that read does.
    await master.client.post(
        "/api/v1/users",
        json={
            "user": {"username": "other", "admin": False, "active": True},
            "password": client_hash("Other-Passw0rd!"),
            "isHashed": True,
        },
        headers=master.admin,
    )
    other = await master.login("other", "Other-Passw0rd!")
    for headers in (master.admin, other):
        read = await master.client.get(f"/api/v1/trials/{t}", headers=headers)
        r = await master.client.get(
            URL, params={"trialIds": t, "group": "inference"}, headers=headers
        )
        assert (read.status_code, r.status_code) == (200, 200), r.text
        assert [m["totalBatches"] for m in json.loads(r.text)["result"]["metrics"]] == [1]
