"""Issue 39 (the API surface): the experiment data reads of the real `determined` 0.38.1
client against our master. Its SDK's `Checkpoint.add_metadata`/`remove_metadata`
(PostCheckpointMetadata), `core_context.experimental.report_task_using_model_version` with
`Checkpoint.get_metrics` and `ModelVersion.get_metrics` (trial source infos), its bindings
for the context tree and files, the validation history, a project's metric ranges, the
search preview and the four metric streams (read live: a paused experiment's stream keeps
sending, every `periodSeconds`), and `det preview-search` from both its CLI and ours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.compat.conftest import PASSWORD, RunningMaster

pytestmark = [pytest.mark.compat, pytest.mark.slow]

GRID = """name: reads
entrypoint: python3 train.py
hyperparameters:
  lr: {type: categorical, vals: [0.1, 0.2]}
searcher: {name: grid, metric: loss, max_concurrent_trials: 2}
resources: {slots_per_trial: 0}
"""

ASHA = """name: asha
entrypoint: python3 train.py
hyperparameters:
  lr: {type: double, minval: 0.0001, maxval: 0.1}
searcher:
  name: adaptive_asha
  metric: loss
  max_trials: 16
  time_metric: batches
  max_time: 1600
  max_rungs: 3
  mode: aggressive
"""

SCRIPT = r"""
import base64, json, os, sys
from determined.common.api import authentication, bindings
from determined.experimental import client

master, exp, trial, ckpt, project = os.environ["M"], *map(int, sys.argv[1:3]), *sys.argv[3:5]
exp, trial, project = int(exp), int(trial), int(project)
sess = authentication.login(master, "admin", os.environ["DET_PASS"])
out = {}

client.login(master=master, user="admin", password=os.environ["DET_PASS"])
c = client.get_checkpoint(ckpt)
c.add_metadata({"added": 1})
c.remove_metadata(["a"])
out["metadata"] = client.get_checkpoint(ckpt).metadata

# a batch-inference task names the model version it used; its metrics are found from both
from determined.core._experimental import ExperimentalCoreContext
version = client.create_model("reads-model").register_version(ckpt)
ExperimentalCoreContext(sess, int(sys.argv[5])).report_task_using_model_version(version)
by_ckpt = client.get_checkpoint(ckpt).get_metrics("inference")
out["by_checkpoint"] = [(m.trial_id, m.group, m.steps_completed, m.metrics) for m in by_ckpt]
out["by_version"] = [(m.trial_id, m.metrics) for m in version.get_metrics("inference")]

tree = bindings.get_GetModelDefTree(sess, experimentId=exp)
out["tree"] = [(f.path, f.isDir, [g.path for g in (f.files or [])]) for f in tree.files]
body = bindings.v1GetModelDefFileRequest(experimentId=exp, path="sub/d.txt")
got = bindings.post_GetModelDefFile(sess, body=body, experimentId=exp)
out["file"] = base64.b64decode(got.file).decode()
hist = bindings.get_GetExperimentValidationHistory(sess, experimentId=exp).validationHistory
out["history"] = [(h.trialId, h.searcherMetric) for h in hist]
ranges = bindings.get_GetProjectNumericMetricsRange(sess, id=project).ranges
out["ranges"] = sorted((r.metricsName, r.min, r.max) for r in ranges)

names = bindings.get_ExpMetricNames(sess, ids=[exp], periodSeconds=1)
first, second = next(names), next(names)  # a paused experiment's stream keeps going
out["names"] = [sorted(first.searcherMetrics), sorted((m.group, m.name) for m in first.metricNames),
                second.metricNames or []]
training = bindings.v1MetricType.TRAINING
batches = next(bindings.get_MetricBatches(sess, experimentId=exp, metricName="loss",
                                          metricType=training, periodSeconds=1))
out["batches"] = batches.batches
snap = next(bindings.get_TrialsSnapshot(sess, experimentId=exp, metricName="loss",
                                        metricType=training, batchesProcessed=2, periodSeconds=1))
out["snapshot"] = sorted((t.trialId, t.batchesProcessed, t.metric) for t in snap.trials)
stream = bindings.get_TrialsSample(sess, experimentId=exp, metricName="loss",
                                   metricType=training, maxTrials=1, periodSeconds=1)
one, two = next(stream), next(stream)
out["sample"] = [one.promotedTrials, [len(t.data) for t in one.trials], two.promotedTrials,
                 two.demotedTrials]

req = bindings.v1PreviewHPSearchRequest(config=json.loads(os.environ["ASHA"]))
summary = bindings.post_PreviewHPSearch(sess, body=req).summary
out["preview"] = [(t.count, t.unit.name, t.unit.value, t.unit.maxLength) for t in summary.trials]
print("RESULT " + json.dumps(out))
"""


def _post(m: RunningMaster, admin: dict[str, str], path: str, body: Any) -> Any:
    r = httpx.post(f"{m.url}{path}", json=body, headers=admin, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _file(path: str, content: bytes, type_: int = 48, mode: int = 0o100644) -> dict[str, Any]:
    import base64

    return {"path": path, "type": type_, "content": base64.b64encode(content).decode(),
            "mtime": "1700000000", "mode": mode, "uid": 0, "gid": 0}  # fmt: skip


def test_the_real_clients_reads(
    det_bin: Path, running_master: RunningMaster, admin: dict[str, str], tmp_path: Path
) -> None:
    m = running_master
    files = [_file("train.py", b"print(1)\n"), _file("sub", b"", 53, 0o40755),
             _file("sub/d.txt", b"data\n")]  # fmt: skip
    created = _post(m, admin, "/api/v1/experiments",
                    {"config": GRID, "activate": False, "modelDefinition": files})  # fmt: skip
    exp_id, project = created["experiment"]["id"], created["experiment"]["projectId"]
    r = httpx.get(f"{m.url}/api/v1/experiments/{exp_id}/trials", headers=admin, timeout=30)
    trials = sorted(t["id"] for t in r.json()["trials"])
    for i, trial in enumerate(trials):
        for step in (1, 2):
            metrics = {"stepsCompleted": step, "metrics": {"avgMetrics": {"loss": step + i}}}
            _post(m, admin, f"/api/v1/trials/{trial}/metrics",
                  {"group": "training", "metrics": metrics})  # fmt: skip
        metrics = {"stepsCompleted": 2, "metrics": {"avgMetrics": {"loss": 0.5 - i / 10}}}
        _post(m, admin, f"/api/v1/trials/{trial}/metrics",
              {"group": "validation", "metrics": metrics})  # fmt: skip
    ckpt = str(uuid.uuid4())
    _post(m, admin, "/api/v1/checkpoints", {"uuid": ckpt, "resources": {"w": "1"},
          "metadata": {"a": 1, "b": 2}, "training": {"trialId": trials[0]}})  # fmt: skip

    import yaml  # the config as the real client sends it: a parsed mapping

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
        "M": m.url, "DET_PASS": PASSWORD, "DET_DEBUG_CONFIG_PATH": str(tmp_path / "cfg"),
        "HOME": str(tmp_path), "ASHA": json.dumps(yaml.safe_load(ASHA)),
    }  # fmt: skip
    single = GRID.replace("name: grid", "name: single").replace(", max_concurrent_trials: 2", "")
    infer_exp = _post(m, admin, "/api/v1/experiments", {"config": single, "activate": False})
    r = httpx.get(f"{m.url}/api/v1/experiments/{infer_exp['experiment']['id']}/trials",
                  headers=admin, timeout=30)  # fmt: skip
    infer = r.json()["trials"][0]["id"]
    metrics = {"stepsCompleted": 1, "metrics": {"avgMetrics": {"acc": 0.75}}}
    _post(m, admin, f"/api/v1/trials/{infer}/metrics", {"group": "inference", "metrics": metrics})
    args = [str(exp_id), str(trials[0]), ckpt, str(project), str(infer)]
    proc = subprocess.run([str(det_bin / "python"), "-c", SCRIPT, *args], capture_output=True,
                          text=True, env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))[7:])

    assert got["metadata"] == {"b": 2, "added": 1}
    assert got["tree"] == [["sub", True, ["sub/d.txt"]], ["train.py", False, []]]
    assert got["file"] == "data\n"
    assert got["history"] == [[trials[0], 0.5], [trials[1], 0.4]]
    assert got["by_checkpoint"] == [[infer, "inference", 1, {"acc": 0.75}]]
    assert got["by_version"] == [[infer, {"acc": 0.75}]]
    assert got["ranges"] == [
        ["inference.acc", 0.75, 0.75],
        ["training.loss", 1.0, 3.0],
        ["validation.loss", 0.4, 0.5],
    ]
    assert got["names"] == [["loss"], [["training", "loss"], ["validation", "loss"]], []]
    assert got["batches"] == [1, 2]
    assert got["snapshot"] == [[trials[0], 2, 2.0], [trials[1], 2, 3.0]]
    # grid ranks by the searcher metric (smaller is better): the second trial leads
    assert got["sample"] == [[trials[1]], [2], [], []]
    assert got["preview"] == [[12, "batches", 100, False], [3, "batches", 400, False],
                              [1, "batches", 1600, False]]  # fmt: skip


def test_det_preview_search_theirs_and_ours(det_bin: Path, running_master: RunningMaster,
                                            tmp_path: Path) -> None:  # fmt: skip
    config = tmp_path / "asha.yaml"
    config.write_text(ASHA)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
        "DET_MASTER": running_master.url, "DET_USER": "admin", "DET_PASS": PASSWORD,
        "DET_DEBUG_CONFIG_PATH": str(tmp_path / "cfg"), "HOME": str(tmp_path),
    }  # fmt: skip
    ours = [sys.executable, "-m", "cli.main"]
    for det in ([str(det_bin / "det")], ours):
        proc = subprocess.run([*det, "preview-search", str(config)], capture_output=True,
                              text=True, env=env, timeout=120)  # fmt: skip
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out
        assert "Using search configuration:" in out and "adaptive_asha" in out, out
        for count, length in (("12", "100"), ("3", "400"), ("1", "1600")):
            assert any(count in line and f"train for {length} batches" in line
                       for line in out.splitlines()), out  # fmt: skip
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    for det in ([str(det_bin / "det")], ours):
        proc = subprocess.run([*det, "preview-search", str(bad)], capture_output=True,
                              text=True, env=env, timeout=120)  # fmt: skip
        assert proc.returncode != 0 and "Missing 'searcher'" in proc.stdout + proc.stderr
