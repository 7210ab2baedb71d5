"""End-to-end through the HTTP API on both databases: login → create → list → report → read."""

from __future__ import annotations

import base64

from tests.conftest import Master

CONFIG = """\
name: smoke
entrypoint: python3 train.py
searcher:
  name: single
  metric: loss
  max_length: 10
hyperparameters:
  lr: 0.1
resources:
  slots_per_trial: 1
"""


def files() -> list[dict[str, object]]:
    return [
        {
            "path": "train.py",
            "type": 48,
            "content": base64.b64encode(b"print(1)\n").decode(),
            "mtime": "1700000000",
            "mode": 33188,
            "uid": 0,
            "gid": 0,
        },
    ]


async def test_full_flow(master: Master) -> None:
    c = master.client
    r = await c.get("/info")
    assert r.status_code == 200 and r.json()["version"]
    r = await c.post(
        "/api/v1/experiments",
        json={"config": CONFIG, "modelDefinition": files(), "activate": True},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]
    # ACTIVE with nothing placed yet shows as QUEUED (Determined's enrichExperimentState).
    assert exp["state"] == "STATE_QUEUED" and exp["numTrials"] == 1
    assert exp["username"] == "determined"
    r = await c.get("/api/v1/experiments", headers=master.user)
    body = r.json()
    assert body["pagination"]["total"] == 1 and body["pagination"]["endIndex"] == 1
    r = await c.get(f"/api/v1/experiments/{exp['id']}/trials", headers=master.user)
    trial = r.json()["trials"][0]
    assert trial["hparams"] == {"lr": 0.1}
    report = {
        "group": "training",
        "metrics": {
            "trialId": trial["id"],
            "trialRunId": 1,
            "stepsCompleted": 5,
            "metrics": {"avgMetrics": {"loss": 0.5}, "batchMetrics": None},
        },
    }
    for _ in range(2):  # a retried report is stored once
        r = await c.post(f"/api/v1/trials/{trial['id']}/metrics", json=report, headers=master.user)
        assert r.status_code == 200, r.text
    r = await c.get(f"/api/v1/trials/{trial['id']}/workloads", headers=master.user)
    wl = r.json()["workloads"]
    assert len(wl) == 1 and wl[0]["training"]["metrics"]["avgMetrics"] == {"loss": 0.5}
    r = await c.post(f"/api/v1/experiments/{exp['id']}/kill", headers=master.user)
    assert r.status_code == 200
    r = await c.get(f"/api/v1/experiments/{exp['id']}", headers=master.user)
    assert r.json()["experiment"]["state"] == "STATE_CANCELED"
