"""Checkpoint GC on a real `det deploy local` deployment (master + agent processes, real trials
writing checkpoints through the harness): when an experiment ends, the master's periodic GC job
removes the files on shared_fs and on S3 (a moto server on 127.0.0.1) and keeps the protected
ones: a warm-start source, a user-protected one, and the best and latest per the policy."""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import WORKLOAD, Deploy, Deployment, wait_for

pytestmark = pytest.mark.slow


def gc_config(name: str, losses: list[float], step_s: float, storage: dict[str, Any]) -> dict:
    return {
        "name": name,
        "entrypoint": "python3 gc_steps.py",
        "hyperparameters": {"losses": losses, "step_s": step_s},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": len(losses)}},
        "max_restarts": 0,
        "checkpoint_storage": {**storage, "save_trial_best": 1, "save_trial_latest": 1},
    }


def checkpoints(d: Deployment, exp_id: int) -> list[dict[str, Any]]:
    found = d.get(f"/api/v1/experiments/{exp_id}/checkpoints", sortByAttr="SORT_BY_BATCH_NUMBER")
    return found["checkpoints"]


def by_steps(d: Deployment, exp_id: int, count: int, timeout: float) -> list[str]:
    def enough() -> list[str] | None:
        found = checkpoints(d, exp_id)
        return [c["uuid"] for c in found] if len(found) >= count else None

    return wait_for(enough, timeout, f"{count} checkpoints of experiment {exp_id}")


def wait_states(d: Deployment, exp_id: int, want: dict[str, str], timeout: float) -> None:
    def reached() -> bool:
        states = {c["uuid"]: c["state"] for c in checkpoints(d, exp_id)}
        return all(states.get(u) == s for u, s in want.items())

    wait_for(reached, timeout, f"checkpoint states {want}")


def test_gc_on_shared_fs_keeps_protected_best_latest_and_warm_start(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=1, slots=1, runtime="process", master_config="checkpoint_gc_interval_s: 1\n")
    store = tmp_path / "store"
    store.mkdir(mode=0o1777)
    store.chmod(0o1777)  # the trial runs as its owner's Unix user
    storage = {"type": "shared_fs", "host_path": str(store), "storage_path": "ckpt"}
    losses = [0.5, 0.2, 0.9, 0.8, 0.7]
    exp_id = d.create_experiment(gc_config("gc-fs", losses, 1.5, storage), WORKLOAD, tmp_path)

    # While it trains: protect step 1 and name step 3 as another experiment's warm start.
    first = by_steps(d, exp_id, 1, 120)[0]
    done = d.det("checkpoint", "protect", first)
    assert done.returncode == 0, done.stderr
    third = by_steps(d, exp_id, 3, 120)[2]
    warm = gc_config("warm", [0.1], 0.1, storage)
    warm["searcher"]["source_checkpoint_uuid"] = third
    d.post("/api/v1/experiments", {"config": json.dumps(warm), "activate": False})

    trial_id = d.trial_of(exp_id)["id"]
    d.wait_trial_state(trial_id, {"STATE_COMPLETED"}, timeout=180)
    uuids = by_steps(d, exp_id, 5, 10)
    want = {u: "STATE_COMPLETED" for u in uuids}
    want[uuids[3]] = "STATE_DELETED"  # step 4: not best (0.2 at step 2), not latest (step 5)
    wait_states(d, exp_id, want, 60)
    for step, u in enumerate(uuids, start=1):
        assert (store / "ckpt" / u / "state").exists() == (step != 4), step
    # Each checkpoint is its writer's alone (as root, the trial's task user, not the master's
    # uid), and the master deleted step 4's all the same.
    kept = store / "ckpt" / uuids[0]
    assert stat.S_IMODE(kept.stat().st_mode) == 0o700
    assert stat.S_IMODE((kept / "state").stat().st_mode) == 0o600
    assert stat.S_IMODE((kept / "metadata.json").stat().st_mode) == 0o600
    if os.geteuid() == 0 and not d.state().single_user_because:
        assert kept.stat().st_uid != 0  # a task user's: root (the master) deleted one anyway
    shown = d.det("checkpoint", "describe", uuids[3])
    assert shown.returncode == 0 and "DELETED" in shown.stdout, shown.stdout + shown.stderr


def test_gc_on_s3(deploy: Deploy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    boto3 = pytest.importorskip("boto3")
    from tests.support.moto_server import fake_aws_environment, moto_endpoint

    endpoint = moto_endpoint()
    fake_aws_environment(monkeypatch, endpoint)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket = f"gc-e2e-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    storage = {
        "type": "s3",
        "bucket": bucket,
        "prefix": "runs",
        "endpoint_url": endpoint,
        "access_key": "testing",
        "secret_key": "testing",
    }
    d = deploy(agents=1, slots=1, runtime="process", master_config="checkpoint_gc_interval_s: 1\n")
    assert os.environ["AWS_ENDPOINT_URL"] == endpoint
    exp_id = d.create_experiment(
        gc_config("gc-s3", [0.3, 0.1, 0.6], 0.2, storage), WORKLOAD, tmp_path
    )
    trial_id = d.trial_of(exp_id)["id"]
    d.wait_trial_state(trial_id, {"STATE_COMPLETED"}, timeout=180)
    uuids = by_steps(d, exp_id, 3, 10)
    want = {uuids[0]: "STATE_DELETED", uuids[1]: "STATE_COMPLETED", uuids[2]: "STATE_COMPLETED"}
    wait_states(d, exp_id, want, 60)
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="runs/").get("Contents", [])
    keys = {o["Key"] for o in listed}
    # (The trial's TensorBoard files live beside the checkpoints, under the cluster id.)
    assert {k.split("/")[1] for k in keys} & set(uuids) == {uuids[1], uuids[2]}
    assert {f"runs/{uuids[1]}/state", f"runs/{uuids[2]}/state"} <= keys
