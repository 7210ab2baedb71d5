"""Determined's trial source infos on SQLite and PostgreSQL: a task reports the checkpoint (and
model version) its trial used, and the trial's metrics are then read from the checkpoint or the
model version; the owner, another user, an admin, no login and bad input."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_experiment_files_api import experiment, other_user, report

INFERENCE = "TRIAL_SOURCE_INFO_TYPE_INFERENCE"


async def checkpoint(m: Master, trial: int) -> str:
    ckpt = str(uuid.uuid4())
    body = {"uuid": ckpt, "resources": {"w": 1}, "training": {"trialId": trial}}
    r = await m.client.post("/api/v1/checkpoints", json=body, headers=m.user)
    assert r.status_code == 200, r.text
    return ckpt


def source(trial: int, ckpt: str, **extra: Any) -> dict[str, Any]:
    info = {"trialId": trial, "checkpointUuid": ckpt, "trialSourceInfoType": INFERENCE, **extra}
    return {"trialSourceInfo": info}


async def test_metrics_by_checkpoint_and_model_version(master: Master) -> None:
    _, trained = await experiment(master)
    ckpt = await checkpoint(master, trained)
    r = await master.client.post("/api/v1/models", json={"name": "m1"}, headers=master.user)
    model_id = r.json()["model"]["id"]
    r = await master.client.post(
        "/api/v1/models/m1/versions", json={"checkpointUuid": ckpt}, headers=master.user
    )
    assert r.status_code == 200, r.text
    _, infer = await experiment(master)  # the inference run
    await report(master, infer, "inference", 1, {"acc": 0.9})
    await report(master, infer, "training", 2, {"loss": 0.1})
    r = await master.client.post(
        "/api/v1/trial-source-info",
        json=source(infer, ckpt, modelId=model_id, modelVersion=1),
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    assert r.json() == {"trialId": infer, "checkpointUuid": ckpt}
    alice = await other_user(master)
    for who in (master.user, alice, master.admin):
        r = await master.client.get(
            f"/api/v1/checkpoints/{ckpt}/metrics",
            params={"trialSourceInfoType": INFERENCE, "metricGroup": "inference"},
            headers=who,
        )
        assert r.status_code == 200, r.text
        [one] = r.json()["metrics"]
        assert (one["trialId"], one["group"], one["totalBatches"]) == (infer, "inference", 1)
        assert one["metrics"] == {"avg_metrics": {"acc": 0.9}}
        r = await master.client.get(f"/api/v1/checkpoints/{ckpt}/metrics", headers=who)
        assert [m["group"] for m in r.json()["metrics"]] == ["inference", "training"]
        r = await master.client.get("/api/v1/models/m1/versions/1/metrics", headers=who)
        assert r.status_code == 200 and len(r.json()["metrics"]) == 2
    r = await master.client.get(
        f"/api/v1/checkpoints/{ckpt}/metrics",
        params={"trialSourceInfoType": "TRIAL_SOURCE_INFO_TYPE_FINE_TUNING"},
        headers=master.user,
    )
    assert r.json() == {"metrics": []}


async def test_who_may_report_and_bad_input(master: Master) -> None:
    _, trial = await experiment(master)
    ckpt = await checkpoint(master, trial)
    c = master.client
    path = "/api/v1/trial-source-info"
    alice = await other_user(master)
    assert_error(await c.post(path, json=source(trial, ckpt), headers=alice), 403)
    assert (await c.post(path, json=source(trial, ckpt))).status_code == 401
    r = await c.post(path, json=source(trial, ckpt), headers=master.admin)
    assert r.status_code == 200, r.text
    for body, status, needle in (
        (source(999999, ckpt), 404, "trial"),
        (source(trial, str(uuid.uuid4())), 404, "checkpoint"),
        (source(trial, "not-a-uuid"), 400, "UUID"),
        (source(trial, "a\x00b"), 400, ""),
        (source(trial, ckpt, trialSourceInfoType="BOGUS"), 400, "trialSourceInfoType"),
        (source(trial, ckpt, modelId=1), 400, "together"),
        (source(trial, ckpt, modelId=999, modelVersion=1), 404, "model"),
        (source(2**40, ckpt), 400, ""),
        ({"trialSourceInfo": "x"}, 400, ""),
        ({}, 400, ""),
    ):
        assert_error(await c.post(path, json=body, headers=master.user), status, needle)
    missing = str(uuid.uuid4())
    assert_error(await c.get(f"/api/v1/checkpoints/{missing}/metrics", headers=master.user), 404)
    r = await c.get("/api/v1/checkpoints/bad/metrics", headers=master.user)
    assert_error(r, 400, "UUID")
    r = await c.get(
        f"/api/v1/checkpoints/{ckpt}/metrics", params={"metricGroup": "a.b"}, headers=master.user
    )
    assert_error(r, 400)
    assert_error(await c.get("/api/v1/models/nope/versions/1/metrics", headers=master.user), 404)
    assert (await c.get(f"/api/v1/checkpoints/{ckpt}/metrics")).status_code == 401
