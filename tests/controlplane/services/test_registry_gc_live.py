"""Checkpoint GC and the model registry on a real master (SQLite and PostgreSQL legs): a
checkpoint registered as a model version is never deleted, by GC or on request; deleting the
version (or the model) releases it, and the next GC pass deletes it where the policy keeps it
no more."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.controlplane.services.test_checkpoint_gc_live import (
    T0,
    GcMaster,
    checkpoint,
    describe,
    end,
    experiment,
    gc_master,
    tick,
)

__all__ = ["gc_master"]  # the fixture, used by name


async def register(m: GcMaster, model: str, ckpt: str) -> None:
    r = await m.client.post("/api/v1/models", json={"name": model}, headers=m.user)
    assert r.status_code == 200, r.text
    r = await m.client.post(
        f"/api/v1/models/{model}/versions", json={"checkpointUuid": ckpt}, headers=m.user
    )
    assert r.status_code == 200, r.text


async def test_a_registered_checkpoint_is_kept_until_its_version_is_deleted(
    gc_master: GcMaster, tmp_path: Path
) -> None:
    m = gc_master
    base = tmp_path / "ckpts"
    storage = (
        f"{{type: shared_fs, host_path: '{tmp_path}', storage_path: ckpts, "
        "save_experiment_best: 0, save_trial_best: 0, save_trial_latest: 1}"
    )
    exp_id, trial_id = await experiment(m, storage)
    registered = await checkpoint(m, trial_id, 10, 0.5)
    unregistered = await checkpoint(m, trial_id, 15, 0.4)
    latest = await checkpoint(m, trial_id, 20, 0.9)
    for ckpt in (registered, unregistered, latest):
        (base / ckpt).mkdir(parents=True)
        (base / ckpt / "model.txt").write_text("model")
    await register(m, "keeper", registered)

    r = await m.client.get(f"/api/v1/experiments/{exp_id}/checkpoint_gc", headers=m.user)
    plan = r.json()
    assert [e["uuid"] for e in plan["delete"]] == [unregistered]
    assert {e["uuid"]: e["keepReasons"] for e in plan["keep"]}[registered] == ["MODEL_REGISTRY"]
    # Nor may a user delete it by hand while it is registered.
    r = await m.client.request(
        "DELETE", "/api/v1/checkpoints", json={"checkpointUuids": [registered]}, headers=m.user
    )
    assert r.status_code == 400 and "MODEL_REGISTRY" in r.text, r.text

    await end(m, exp_id)
    got = await tick(m, T0)
    assert got.deleted == [unregistered] and not (base / unregistered).exists()
    assert (await describe(m, registered))["state"] == "STATE_COMPLETED"
    assert (base / registered / "model.txt").exists()
    # Later passes keep it too.
    assert (await tick(m, T0 + timedelta(hours=1))).deleted == []
    assert (base / registered).exists()

    r = await m.client.delete("/api/v1/models/keeper/versions/1", headers=m.user)
    assert r.status_code == 200, r.text
    # The deletion asks for a GC pass of the experiment (the master's own job may run it first).
    await tick(m, T0 + timedelta(hours=2))
    assert (await describe(m, registered))["state"] == "STATE_DELETED"
    assert not (base / registered).exists()
    assert (await describe(m, latest))["state"] == "STATE_COMPLETED"


async def test_deleting_the_model_releases_its_checkpoints(
    gc_master: GcMaster, tmp_path: Path
) -> None:
    m = gc_master
    base = tmp_path / "ckpts"
    storage = (
        f"{{type: shared_fs, host_path: '{tmp_path}', storage_path: ckpts, "
        "save_trial_best: 0, save_trial_latest: 1}"
    )
    exp_id, trial_id = await experiment(m, storage)
    old = await checkpoint(m, trial_id, 10, None)
    await checkpoint(m, trial_id, 20, None)
    (base / old).mkdir(parents=True)
    await register(m, "whole", old)
    await end(m, exp_id)
    assert (await tick(m, T0)).deleted == []
    r = await m.client.delete("/api/v1/models/whole", headers=m.user)
    assert r.status_code == 200, r.text
    await tick(m, T0 + timedelta(hours=1))
    assert (await describe(m, old))["state"] == "STATE_DELETED"
    assert not (base / old).exists()
