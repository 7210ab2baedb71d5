"""Issue 39 item 4: a detached (unmanaged) run. The real `determined` 0.38.1
`core_v2.init(...)` runs outside the cluster (a plain process, no allocation) with a user's
session and reports to our master: PUT /api/v1/experiments/by-external-id/{id}, PUT
/api/v1/trials, POST /api/v1/trials/{id}/start, POST /api/v1/runs/start, PATCH
/api/v1/trials/{id}, metrics, a checkpoint and its stdout (POST /task-logs). The same external
ids resume the same trial."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.compat.conftest import PASSWORD, RunningMaster

pytestmark = [pytest.mark.compat, pytest.mark.slow]

SCRIPT = r"""
import json, os
from determined import core
from determined.experimental import core_v2

core_v2.init(
    config=core_v2.Config(
        name="detached-run",
        hparams={"lr": 0.1},
        external_experiment_id=os.environ.get("EXT_EXP") or None,
        external_trial_id=os.environ.get("EXT_TRIAL") or None,
    ),
    checkpoint_storage=os.environ["CKPT_DIR"],
    # AUTO needs TensorFlow or torch for its metric writer; this laptop has neither.
    tensorboard_mode=core.TensorboardMode.MANUAL,
)
start = core_v2.info.trial._steps_completed
latest = core_v2.info.latest_checkpoint
for step in (start + 1, start + 2):
    core_v2.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
core_v2.train.report_validation_metrics(steps_completed=start + 2, metrics={"loss": 0.4})
with core_v2.checkpoint.store_path({"steps_completed": start + 2}) as (path, uuid):
    (path / "w.txt").write_text("weights")
print("hello from the detached run")
print("RESULT " + json.dumps({
    "exp": core_v2.info.trial.experiment_id, "trial": core_v2.info.trial.trial_id,
    "task": core_v2.info.task_id, "uuid": uuid, "start": start, "latest": latest,
    "hparams": core_v2.info.trial.hparams, "url": core_v2.url_reverse_webui_exp_view(),
}))
core_v2.close()
"""


def _run(det_bin: Path, master: RunningMaster, tmp: Path, trial: str | None) -> dict[str, Any]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
        "DET_MASTER": master.url,
        "DET_USER": "admin",
        "DET_PASS": PASSWORD,
        "DET_DEBUG_CONFIG_PATH": str(tmp / "detcfg"),
        "EXT_EXP": "laptop-sweep-1" if trial else "",
        "EXT_TRIAL": trial or "",
        "CKPT_DIR": str(tmp / "ckpt"),
        "HOME": str(tmp),
    }
    proc = subprocess.run(
        [str(det_bin / "python"), "-c", SCRIPT], capture_output=True, text=True, env=env,
        timeout=120, cwd=tmp,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def _get(master: RunningMaster, admin: dict[str, str], path: str) -> Any:
    reply = httpx.get(f"{master.url}{path}", headers=admin, timeout=30)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_a_detached_run_reports_and_resumes(
    det_bin: Path, running_master: RunningMaster, admin: dict[str, str], tmp_path: Path
) -> None:
    first = _run(det_bin, running_master, tmp_path, "trial-a")
    assert first["start"] == 0 and first["latest"] is None
    assert first["hparams"] == {"lr": 0.1}
    assert first["url"] == f"{running_master.url}/det/experiments/{first['exp']}"
    exp = _get(running_master, admin, f"/api/v1/experiments/{first['exp']}")["experiment"]
    assert exp["name"] == "detached-run" and exp["unmanaged"] is True
    assert exp["externalExperimentId"] == "laptop-sweep-1"
    assert exp["state"] == "STATE_COMPLETED"
    trial = _get(running_master, admin, f"/api/v1/trials/{first['trial']}")["trial"]
    assert trial["state"] == "STATE_COMPLETED" and trial["totalBatchesProcessed"] == 2
    assert trial["hparams"] == {"lr": 0.1}
    ckpts = _get(running_master, admin, f"/api/v1/trials/{first['trial']}/checkpoints")
    assert [c["uuid"] for c in ckpts["checkpoints"]] == [first["uuid"]]
    logs = httpx.get(
        f"{running_master.url}/api/v1/tasks/{first['task']}/logs", headers=admin, timeout=30
    )
    assert "hello from the detached run" in logs.text

    # The same external ids: the same experiment and trial, resumed where it stopped.
    again = _run(det_bin, running_master, tmp_path, "trial-a")
    assert (again["exp"], again["trial"]) == (first["exp"], first["trial"])
    assert again["start"] == 2 and again["latest"] == first["uuid"]
    trial = _get(running_master, admin, f"/api/v1/trials/{first['trial']}")["trial"]
    assert trial["totalBatchesProcessed"] == 4

    # Another external trial id: a second trial of the same experiment.
    other = _run(det_bin, running_master, tmp_path, "trial-b")
    assert other["exp"] == first["exp"] and other["trial"] != first["trial"]
    trials = _get(running_master, admin, f"/api/v1/experiments/{first['exp']}/trials")
    assert sorted(t["id"] for t in trials["trials"]) == sorted([first["trial"], other["trial"]])


def test_a_detached_run_without_external_ids_gets_its_own_experiment(
    det_bin: Path, running_master: RunningMaster, admin: dict[str, str], tmp_path: Path
) -> None:
    """POST /api/v1/experiments (unmanaged) and POST /api/v1/trials: a new pair every run."""
    first = _run(det_bin, running_master, tmp_path, None)
    second = _run(det_bin, running_master, tmp_path, None)
    assert first["exp"] != second["exp"] and first["trial"] != second["trial"]
    exp = _get(running_master, admin, f"/api/v1/experiments/{first['exp']}")["experiment"]
    assert exp["unmanaged"] is True and exp.get("externalExperimentId") is None
    assert exp["state"] == "STATE_COMPLETED"
