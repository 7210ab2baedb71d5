"""Checkpoint GC on a real master (SQLite and PostgreSQL legs): an ended experiment's checkpoints
are planned, deleted from shared_fs and from S3 (moto server, real boto3) and recorded; the
protected ones stay; a failed deletion is recorded, retried later and never shown as done."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.app import create_app
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services import checkpoint_gc
from controlplane.services.checkpoint_files import CheckpointDeleteError
from tests.conftest import Master, make_settings

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


@dataclass
class GcMaster(Master):
    # The test's own engine: the app's runs on the test client's event loop, not the test's.
    factory: async_sessionmaker[AsyncSession] | None = None
    default_storage: dict[str, Any] = field(default_factory=dict)


@pytest.fixture
async def gc_master(db_url: str, tmp_path: Path) -> AsyncIterator[GcMaster]:
    # The app's own GC job waits a day, so only the test's explicit passes run.
    settings = make_settings(db_url, tmp_path, checkpoint_gc_interval_s=86400)
    app = create_app(settings, announce=lambda _: None)
    async with AsyncTestClient(app=app, base_url="http://127.0.0.1") as client:
        m = GcMaster(client=client, admin={}, user={})
        m.admin = await m.login("admin")
        m.user = await m.login("determined")
        engine = make_engine(db_url)
        m.factory = make_sessionmaker(engine)
        m.default_storage = settings.default_checkpoint_storage
        try:
            yield m
        finally:
            await engine.dispose()


def yaml(storage: str) -> str:
    return "\n".join(
        [
            "name: gc",
            "entrypoint: python3 train.py",
            "searcher: {name: single, metric: loss, max_length: 10}",
            "resources: {slots_per_trial: 0}",
            f"checkpoint_storage: {storage}",
        ]
    )


async def experiment(m: Master, storage: str) -> tuple[int, int]:
    r = await m.client.post(
        "/api/v1/experiments", json={"config": yaml(storage), "activate": False}, headers=m.user
    )
    assert r.status_code == 200, r.text
    exp_id = r.json()["experiment"]["id"]
    r = await m.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=m.user)
    return exp_id, r.json()["trials"][0]["id"]


async def checkpoint(m: Master, trial_id: int, steps: int, loss: float | None) -> str:
    ckpt = str(uuid.uuid4())
    body = {
        "uuid": ckpt,
        "resources": {"model.txt": "5"},
        "metadata": {"steps_completed": steps},
        "training": {"trialId": trial_id},
    }
    r = await m.client.post("/api/v1/checkpoints", json=body, headers=m.user)
    assert r.status_code == 200, r.text
    if loss is not None:
        metrics = {"stepsCompleted": steps, "metrics": {"avgMetrics": {"loss": loss}}}
        r = await m.client.post(
            f"/api/v1/trials/{trial_id}/metrics",
            json={"group": "validation", "metrics": metrics},
            headers=m.user,
        )
        assert r.status_code == 200, r.text
    return ckpt


async def describe(m: Master, ckpt: str) -> dict[str, Any]:
    r = await m.client.get(f"/api/v1/checkpoints/{ckpt}", headers=m.user)
    assert r.status_code == 200, r.text
    return r.json()["checkpoint"]


async def end(m: Master, exp_id: int) -> None:
    r = await m.client.post(f"/api/v1/experiments/{exp_id}/kill", headers=m.user)
    assert r.status_code == 200, r.text
    r = await m.client.get(f"/api/v1/experiments/{exp_id}", headers=m.user)
    assert r.json()["experiment"]["state"] in ("STATE_CANCELED", "STATE_COMPLETED")


async def tick(m: GcMaster, now: datetime, **kw: Any) -> checkpoint_gc.DeletionResults:
    assert m.factory is not None
    return await checkpoint_gc.gc_tick(m.factory, now=now, default_storage=m.default_storage, **kw)


def refuse(storage: Any, ckpt: str) -> None:
    raise CheckpointDeleteError(f"checkpoint {ckpt}: storage unreachable")


async def test_ended_experiment_on_shared_fs(gc_master: GcMaster, tmp_path: Path) -> None:
    m = gc_master
    base = tmp_path / "ckpts" / "sub"
    exp_id, trial_id = await experiment(
        m,
        f"{{type: shared_fs, host_path: '{base.parent}', storage_path: sub, "
        "save_trial_best: 1, save_trial_latest: 1}",
    )
    protected = await checkpoint(m, trial_id, 10, 0.5)
    best = await checkpoint(m, trial_id, 20, 0.1)
    worse = await checkpoint(m, trial_id, 30, 0.9)
    unvalidated = await checkpoint(m, trial_id, 35, None)
    latest = await checkpoint(m, trial_id, 40, None)
    for ckpt in (protected, best, worse, unvalidated, latest):
        (base / ckpt).mkdir(parents=True)
        (base / ckpt / "model.txt").write_text("model")
    r = await m.client.put(
        f"/api/v1/checkpoints/{protected}/protection", json={"protected": True}, headers=m.user
    )
    assert r.status_code == 200 and r.json()["checkpoint"]["protected"] is True

    # A running experiment is not collected; the dry run shows the plan and changes nothing.
    assert (await tick(m, T0)).deleted == []
    r = await m.client.get(f"/api/v1/experiments/{exp_id}/checkpoint_gc", headers=m.user)
    plan = r.json()
    assert [e["uuid"] for e in plan["delete"]] == [worse, unvalidated]
    assert {e["uuid"]: e["keepReasons"] for e in plan["keep"]} == {
        protected: ["USER_PROTECTED"],
        best: ["TRIAL_BEST"],
        latest: ["TRIAL_LATEST"],
    }

    await end(m, exp_id)
    # The first pass fails: nothing is reported deleted and the error is shown.
    got = await tick(m, T0, deleter=refuse)
    assert got.deleted == [] and set(got.failed) == {worse, unvalidated}
    shown = await describe(m, worse)
    assert shown["state"] == "STATE_COMPLETED"
    assert shown["deletion"]["attempts"] == 1
    assert "storage unreachable" in shown["deletion"]["error"]
    assert (base / worse / "model.txt").exists()
    # Not due yet: a pass 10 s later leaves it alone, even with a working storage.
    assert (await tick(m, T0 + timedelta(seconds=10))).deleted == []
    assert (base / worse).exists()
    # Due: the retry deletes the files and records it.
    got = await tick(m, T0 + timedelta(seconds=31))
    assert sorted(got.deleted) == sorted([worse, unvalidated]) and got.failed == {}
    for ckpt in (worse, unvalidated):
        shown = await describe(m, ckpt)
        assert shown["state"] == "STATE_DELETED" and shown["resources"] == {}
        assert shown["deletion"]["deletedTime"] is not None and shown["deletion"]["error"] is None
        assert not (base / ckpt).exists()
    for ckpt in (protected, best, latest):
        assert (await describe(m, ckpt))["state"] == "STATE_COMPLETED"
        assert (base / ckpt / "model.txt").exists()

    # A stricter policy (Determined's PATCH checkpointStorage) collects again.
    r = await m.client.patch(
        f"/api/v1/experiments/{exp_id}",
        json={"checkpointStorage": {"saveTrialLatest": 0}},
        headers=m.user,
    )
    assert r.status_code == 200, r.text
    # The PATCH wakes the master's own GC job too: either pass may be the one that deletes.
    await tick(m, T0 + timedelta(minutes=5))
    assert (await describe(m, latest))["state"] == "STATE_DELETED"
    assert (base / protected).exists() and (base / best).exists() and not (base / latest).exists()


async def test_warm_start_source_is_kept(gc_master: GcMaster, tmp_path: Path) -> None:
    m = gc_master
    storage = (
        f"{{type: shared_fs, host_path: '{tmp_path}', save_trial_best: 0, save_trial_latest: 0}}"
    )
    exp_id, trial_id = await experiment(m, storage)
    source = await checkpoint(m, trial_id, 10, 0.5)
    other = await checkpoint(m, trial_id, 20, 0.4)
    config = yaml(storage).replace(
        "searcher: {name: single,", f"searcher: {{source_checkpoint_uuid: '{source}', name: single,"
    )
    r = await m.client.post(
        "/api/v1/experiments", json={"config": config, "activate": False}, headers=m.user
    )
    assert r.status_code == 200, r.text
    await end(m, exp_id)
    got = await tick(m, T0)
    assert got.deleted == [other]
    assert (await describe(m, source))["state"] == "STATE_COMPLETED"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Any:
    boto3 = pytest.importorskip("boto3")
    from tests.support.moto_server import fake_aws_environment, moto_endpoint

    endpoint = moto_endpoint()
    fake_aws_environment(monkeypatch, endpoint)
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.endpoint = endpoint  # type: ignore[attr-defined]
    return client


async def test_s3_deletion_and_a_failing_bucket(gc_master: GcMaster, s3: Any) -> None:
    m = gc_master
    bucket = f"gc-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    storage = (
        f"{{type: s3, bucket: {bucket}, prefix: runs, endpoint_url: '{s3.endpoint}', "
        "save_trial_best: 1, save_trial_latest: 0}"
    )
    exp_id, trial_id = await experiment(m, storage)
    keep = await checkpoint(m, trial_id, 10, 0.1)
    drop = await checkpoint(m, trial_id, 20, 0.9)
    for ckpt in (keep, drop):
        for name in ("model.txt", "sub/state.bin"):
            s3.put_object(Bucket=bucket, Key=f"runs/{ckpt}/{name}", Body=b"x")
    await end(m, exp_id)

    # The bucket is gone for a while: S3 answers NoSuchBucket, the deletion is not done.
    for obj in s3.list_objects_v2(Bucket=bucket)["Contents"]:
        s3.delete_object(Bucket=bucket, Key=obj["Key"])
    s3.delete_bucket(Bucket=bucket)
    got = await tick(m, T0)
    assert got.failed and drop in got.failed and got.deleted == []
    assert (await describe(m, drop))["state"] == "STATE_COMPLETED"
    assert "NoSuchBucket" in (await describe(m, drop))["deletion"]["error"]

    s3.create_bucket(Bucket=bucket)
    for ckpt in (keep, drop):
        for name in ("model.txt", "sub/state.bin"):
            s3.put_object(Bucket=bucket, Key=f"runs/{ckpt}/{name}", Body=b"x")
    got = await tick(m, T0 + timedelta(minutes=1))
    assert got.deleted == [drop]
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"])
    assert keys == [f"runs/{keep}/model.txt", f"runs/{keep}/sub/state.bin"]
    assert (await describe(m, drop))["state"] == "STATE_DELETED"


async def test_remove_files_by_glob(gc_master: GcMaster, tmp_path: Path) -> None:
    """`det checkpoint rm --glob`: matching files go, PARTIALLY_DELETED with what is left;
    no globs re-reads the resources; removing the rest leaves it DELETED."""
    m = gc_master
    base = tmp_path / "store" / "s"
    _, trial_id = await experiment(
        m, f"{{type: shared_fs, host_path: '{base.parent}', storage_path: s}}"
    )
    ckpt = await checkpoint(m, trial_id, 10, 0.5)
    (base / ckpt / "logs").mkdir(parents=True)
    (base / ckpt / "model.txt").write_text("model")
    (base / ckpt / "logs" / "a.log").write_text("log")
    (base / ckpt / "extra.bin").write_text("xyz")

    async def rm(globs: list[str]) -> None:
        body = {"checkpointUuids": [ckpt], "checkpointGlobs": globs}
        r = await m.client.post("/api/v1/checkpoints/rm", json=body, headers=m.user)
        assert r.status_code == 200, r.text
        await tick(m, T0)

    await rm([])  # refresh: the storage holds more than was reported
    shown = await describe(m, ckpt)
    assert shown["state"] == "STATE_COMPLETED" and shown["resources"] == {
        "extra.bin": "3",
        "logs/": "0",
        "logs/a.log": "3",
        "model.txt": "5",
    }
    await rm(["logs", "*.bin"])
    shown = await describe(m, ckpt)
    assert shown["state"] == "STATE_PARTIALLY_DELETED"
    assert shown["resources"] == {"model.txt": "5"}
    assert sorted(p.name for p in (base / ckpt).iterdir()) == ["model.txt"]
    await rm(["**/*"])
    shown = await describe(m, ckpt)
    assert shown["state"] == "STATE_DELETED" and shown["resources"] == {}
    assert not (base / ckpt).exists()
    r = await m.client.post(
        "/api/v1/checkpoints/rm",
        json={"checkpointUuids": [ckpt], "checkpointGlobs": ["a\x00b"]},
        headers=m.user,
    )
    assert r.status_code == 400 and "without NUL" in r.text


async def test_protecting_cancels_a_pending_deletion(gc_master: GcMaster, tmp_path: Path) -> None:
    m = gc_master
    assert m.factory is not None
    base = tmp_path / "store" / "s"
    _, trial_id = await experiment(
        m, f"{{type: shared_fs, host_path: '{base.parent}', storage_path: s}}"
    )
    ckpt = await checkpoint(m, trial_id, 10, 0.5)
    (base / ckpt).mkdir(parents=True)
    (base / ckpt / "model.txt").write_text("model")
    async with transaction(m.factory) as session:
        assert await checkpoint_gc.request_deletion(session, [ckpt], T0) == 1
    assert (await describe(m, ckpt))["deletion"]["requestedTime"]
    r = await m.client.put(
        f"/api/v1/checkpoints/{ckpt}/protection", json={"protected": True}, headers=m.user
    )
    assert r.status_code == 200 and r.json()["checkpoint"]["deletion"] is None
    assert (await tick(m, T0 + timedelta(hours=1))).deleted == []
    assert (base / ckpt / "model.txt").exists()
