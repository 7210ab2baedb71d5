"""The checkpoint GC routes refuse bad input with a clear 4xx and change nothing: unknown and
malformed uuids, NUL, oversized lists, wrong types, protected checkpoints, other users."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from controlplane.domain import limits
from tests.conftest import Master

YAML = "\n".join(
    [
        "name: gc",
        "entrypoint: python3 train.py",
        "searcher: {name: single, metric: loss, max_length: 10}",
        "resources: {slots_per_trial: 0}",
    ]
)


async def _checkpoint(m: Master) -> tuple[int, str]:
    r = await m.client.post(
        "/api/v1/experiments", json={"config": YAML, "activate": False}, headers=m.user
    )
    exp_id = r.json()["experiment"]["id"]
    r = await m.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=m.user)
    trial_id = r.json()["trials"][0]["id"]
    ckpt = str(uuid.uuid4())
    body = {
        "uuid": ckpt,
        "resources": {"a": "1"},
        "training": {"trialId": trial_id},
        "metadata": {"steps_completed": 1},
    }
    r = await m.client.post("/api/v1/checkpoints", json=body, headers=m.user)
    assert r.status_code == 200, r.text
    return exp_id, ckpt


async def _state(m: Master, ckpt: str) -> dict[str, Any]:
    r = await m.client.get(f"/api/v1/checkpoints/{ckpt}", headers=m.user)
    return r.json()["checkpoint"]


@pytest.mark.parametrize(
    ("uuids", "status", "message"),
    [
        (["not-a-uuid"], 400, "is not a UUID"),
        (["0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0\x00"], 400, "is not a UUID"),
        (["../../etc/passwd"], 400, "is not a UUID"),
        (["0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0"], 400, "is not a UUID"),
        ([str(uuid.UUID(int=7))], 404, "not found"),
        ([], 400, "at least one"),
        ("0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", 400, ""),
        ([1], 400, ""),
        ([str(uuid.UUID(int=i)) for i in range(limits.CHECKPOINTS_PER_DELETE + 1)], 400, ""),
    ],
)
async def test_delete_refuses_bad_uuids_and_changes_nothing(
    master: Master, uuids: Any, status: int, message: str
) -> None:
    _, ckpt = await _checkpoint(master)
    # A bad uuid beside a good one: the request is all or nothing.
    body = {"checkpointUuids": [ckpt, *uuids] if isinstance(uuids, list) and uuids else uuids}
    r = await master.client.request("DELETE", "/api/v1/checkpoints", json=body, headers=master.user)
    assert r.status_code == status, r.text
    assert message in r.text
    assert (await _state(master, ckpt))["deletion"] is None


async def test_protected_checkpoint_refuses_deletion_until_unprotected(master: Master) -> None:
    _, ckpt = await _checkpoint(master)
    path = f"/api/v1/checkpoints/{ckpt}/protection"
    r = await master.client.put(path, json={"protected": True}, headers=master.user)
    assert r.status_code == 200 and r.json()["checkpoint"]["protected"] is True
    body = {"checkpointUuids": [ckpt]}
    r = await master.client.request("DELETE", "/api/v1/checkpoints", json=body, headers=master.user)
    assert r.status_code == 400 and "protected (USER_PROTECTED)" in r.text
    assert (await _state(master, ckpt))["deletion"] is None
    r = await master.client.put(path, json={"protected": False}, headers=master.user)
    assert r.status_code == 200
    r = await master.client.request("DELETE", "/api/v1/checkpoints", json=body, headers=master.user)
    assert r.status_code == 200, r.text
    assert (await _state(master, ckpt))["deletion"]["requestedTime"]


async def test_another_user_may_not_delete_or_protect(master: Master) -> None:
    _, ckpt = await _checkpoint(master)
    await master.client.post(
        "/api/v1/users",
        json={"user": {"username": "eve", "active": True}, "password": "pw"},
        headers=master.admin,
    )
    eve = await master.login("eve", "pw")
    r = await master.client.request(
        "DELETE", "/api/v1/checkpoints", json={"checkpointUuids": [ckpt]}, headers=eve
    )
    assert r.status_code == 403
    r = await master.client.put(
        f"/api/v1/checkpoints/{ckpt}/protection", json={"protected": True}, headers=eve
    )
    assert r.status_code == 403
    assert (await _state(master, ckpt))["protected"] is False
    r = await master.client.post("/api/v1/cleanup_logs", headers=eve)
    assert r.status_code == 403
    r = await master.client.post("/api/v1/cleanup_logs", headers=master.admin)
    assert r.status_code == 200 and r.json() == {"removedCount": "0"}


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"saveTrialBest": -1}, "saveTrialBest must be an integer"),
        ({"saveTrialLatest": "1"}, "saveTrialLatest must be an integer"),
        ({"saveExperimentBest": True}, "saveExperimentBest must be an integer"),
        ({"type": "s3"}, "not type"),
        ({"hostPath": "/etc"}, "not hostPath"),
    ],
)
async def test_patch_policy_refuses_bad_values(
    master: Master, patch: dict[str, Any], message: str
) -> None:
    exp_id, _ = await _checkpoint(master)
    r = await master.client.patch(
        f"/api/v1/experiments/{exp_id}", json={"checkpointStorage": patch}, headers=master.user
    )
    assert r.status_code == 400 and message in r.text, r.text
    r = await master.client.get(f"/api/v1/experiments/{exp_id}", headers=master.user)
    storage = r.json()["config"]["checkpoint_storage"]
    assert (storage["save_trial_best"], storage["save_trial_latest"]) == (1, 1)


async def test_gc_routes_on_unknown_experiment_and_bad_protection_path(master: Master) -> None:
    r = await master.client.get("/api/v1/experiments/999/checkpoint_gc", headers=master.user)
    assert r.status_code == 404
    r = await master.client.post("/api/v1/experiments/999/checkpoint_gc", headers=master.user)
    assert r.status_code == 404
    r = await master.client.put(
        "/api/v1/checkpoints/nope/protection", json={"protected": True}, headers=master.user
    )
    assert r.status_code == 400 and "is not a UUID" in r.text
    r = await master.client.put(
        f"/api/v1/checkpoints/{uuid.UUID(int=3)}/protection",
        json={"protected": True},
        headers=master.user,
    )
    assert r.status_code == 404
