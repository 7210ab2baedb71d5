"""The real determined==0.38.1 Core API (wire §6, level 2) in a task on `det deploy local`.

A trial runs tests/e2e/determined_core/train.py with the determined venv's interpreter: not our
harness, the real package, which finds the master, its trial and the checkpoint to resume from
in the info files the master sent. In docker the entrypoint first runs determined's own
`prep_container --resources` (as its entrypoint.sh does), which reads those files, inspects the
GPUs and posts `acceleratorData`. The test pauses the experiment mid-training: the trial sees
the preemption, acknowledges it, checkpoints to shared_fs and exits; its metrics and checkpoint
are on the master; activated again, it resumes from that checkpoint and completes.

Docker: the task image has no Python of its own; the host's interpreter and both venvs are
bind-mounted read-only (tests/support/docker_image.py), so the package inside is the real one.
The process runtime runs the same script unchanged: there is no /run/determined, and the
task's sitecustomize (the agent's pylib) points the real package at $DET_RUN_DIR/info and at the
shared_fs host path.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.compat.conftest import det_venv
from tests.e2e.conftest import Deploy, Deployment, docker_image_config, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.compat]

CONTEXT = Path(__file__).resolve().parent / "determined_core"
STEPS = 30
INFO_FILES = "info files: cluster.json rendezvous.json resources.json trial.json"


def det_python() -> str:
    venv = det_venv()
    if venv is None:
        reason = "the determined==0.38.1 client venv is missing (scripts/setup.sh makes it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return str(venv / "bin" / "python")


def config(runtime: str, ckpt: Path) -> dict[str, Any]:
    python = det_python()
    run = f"{python} train.py"
    if runtime == "docker":
        # Determined's entrypoint.sh: prep_container first (here --resources only: the context
        # directory is already in place, and a one-container trial needs no --rendezvous).
        # The listing first: prep_container would write cluster.json and trial.json itself if
        # they were missing, so this shows the master's files were there before it ran.
        run = (
            "echo info before prep: $(ls /run/determined/info) && "
            f"{python} -m determined.exec.prep_container --resources && exec {run}"
        )
    out: dict[str, Any] = {
        "name": f"determined-core-{runtime}",
        "entrypoint": run,
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": STEPS}},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(ckpt)},
        "environment": {"environment_variables": [f"TRAIN_STEPS={STEPS}", "TRAIN_STEP_S=0.25"]},
        "max_restarts": 0,
    }
    if runtime == "docker":
        image = docker_image_config()
        venv = str(Path(python).parents[1])
        image["bind_mounts"].append({"host_path": venv, "container_path": venv, "read_only": True})
        out["environment"] = {**image["environment"], **out["environment"]}
        out["bind_mounts"] = image["bind_mounts"]
    return out


def logs_matching(d: Deployment, trial_id: int, pattern: str) -> list[re.Match[str]]:
    return [m for line in d.trial_logs(trial_id) if (m := re.search(pattern, line))]


@pytest.mark.parametrize("runtime", ["docker", "process"])
def test_real_core_api_reports_checkpoints_and_resumes_after_a_pause(
    deploy: Deploy, tmp_path: Path, runtime: str
) -> None:
    began = time.monotonic()
    (tmp_path / "ckpt").mkdir()  # docker refuses a bind mount whose source is missing
    (tmp_path / "ckpt").chmod(0o1777)  # the trial runs as its owner's Unix user, not root
    cfg = config(runtime, tmp_path / "ckpt")
    d = deploy(agents=1, slots=1, runtime=runtime)
    exp_id = d.create_experiment(cfg, CONTEXT, tmp_path)
    trial = d.trial_of(exp_id)
    trial_id, task_id = trial["id"], trial["taskId"]
    try:
        d.wait_steps(trial_id, 4, timeout=180)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; logs:\n" + "\n".join(d.trial_logs(trial_id)[-60:])) from None
    logs = d.trial_logs(trial_id)
    assert INFO_FILES in logs, logs[-40:]
    assert f"cluster info: trial {trial_id} run 1" in logs, logs[-40:]
    assert "started at step 0 from None" in logs, logs[-40:]

    # Pause: the real watcher sees the preemption, the trial acks, checkpoints and exits 0.
    d.post(f"/api/v1/experiments/{exp_id}/pause")
    (preempted,) = wait_for(
        lambda: logs_matching(d, trial_id, r"preempted at step (\d+), checkpoint (\S+)"),
        90,
        "the trial to checkpoint and exit on preemption",
    )
    paused_at, uuid = int(preempted.group(1)), preempted.group(2)
    wait_for(
        lambda: (
            d.get(f"/api/v1/experiments/{exp_id}")["experiment"]["state"] == "STATE_PAUSED"
            and not d.get("/api/v1/tasks").get("allocationIdToSummary")
        ),
        60,
        "the experiment PAUSED with no allocation left",
    )
    assert 4 <= paused_at < STEPS
    assert d.trial(trial_id)["restarts"] == 0  # an acknowledged preemption is no failure

    # The checkpoint is recorded (API and our det), with its file on the shared_fs.
    ckpt = d.get(f"/api/v1/checkpoints/{uuid}")["checkpoint"]
    assert ckpt["state"] == "STATE_COMPLETED" and ckpt["metadata"]["steps_completed"] == paused_at
    assert "state.json" in ckpt["resources"]
    # Under the storage_path the master's storage adds (merged, as Determined merges it).
    assert (tmp_path / "ckpt" / "determined-checkpoint" / uuid / "state.json").is_file()
    listed = d.det("experiment", "list-checkpoints", str(exp_id))
    assert listed.returncode == 0 and uuid in listed.stdout, listed.stdout + listed.stderr
    # Metrics are visible: every step up to the pause.
    assert d.training_steps(trial_id) == list(range(1, paused_at + 1))
    assert d.trial(trial_id)["runnerState"] == "training"

    # Activate: a new allocation; the real package gets the checkpoint as latest_checkpoint.
    d.post(f"/api/v1/experiments/{exp_id}/activate")
    done = d.wait_trial_state(trial_id, {"STATE_COMPLETED"}, timeout=240)
    assert done["restarts"] == 0
    starts = [m.group(0) for m in logs_matching(d, trial_id, r"started at step \d+ from \S+")]
    assert starts == ["started at step 0 from None", f"started at step {paused_at} from {uuid}"]
    assert f"cluster info: trial {trial_id} run 2" in d.trial_logs(trial_id)
    assert sorted(set(d.training_steps(trial_id))) == list(range(1, STEPS + 1))
    assert done["latestValidation"]["metrics"]["avgMetrics"]["loss"] == pytest.approx(1 / STEPS)
    described = d.det("trial", "describe", str(trial_id))
    assert described.returncode == 0 and "COMPLETED" in described.stdout, described.stdout

    if runtime == "docker":
        assert "info before prep: " + INFO_FILES.removeprefix("info files: ") in logs
        # prep_container --resources reported each allocation's (CPU-only) container.
        reports = d.get(f"/api/v1/tasks/{task_id}/acceleratorData")["acceleratorData"]
        assert [r["acceleratorType"] for r in reports] == ["cpu", "cpu"], reports
        assert {r["allocationId"] for r in reports} == {f"{task_id}.1", f"{task_id}.2"}
        assert all(r["acceleratorUuids"] == [] and r["nodeName"] for r in reports), reports
    print(f"{runtime}: paused at step {paused_at}; {time.monotonic() - began:.1f} s in all")
