"""Determined's core_api/11_generic_metrics case end to end on `det deploy local`: metric groups
with any name through the harness, the wire, the store, the API and its URLs; searcher `single`
completes although no validation reports its metric; the experiment is shown RUNNING while its
trial runs.

What users saw before: the harness refused `grou%p_c` ("invalid metric group"), and the master
ended the same experiment in ERROR ("a validation report lacks the metric 'x'").
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Deploy, Deployment, wait_for
from tests.e2e.test_determined_code import real_det_venv
from tests.e2e.test_determined_code import real_determined_python as real_determined_python
from tests.e2e.test_search import finished, trials_of

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "determined" / "core_api"
GROUPS = ["training", "validation", "group_b", "grou%p_c", "infer ence", "inf%er en/ce"]
# The real client's SDK reads each group back (it puts the group in the URL's query).
SDK_READ = r"""
import json, sys
from determined.experimental import client

master, password, trial_id = sys.argv[1:]
client.login(master=master, user="admin", password=password)
trial = client.get_trial(int(trial_id))
groups = json.loads(sys.stdin.read())
print(json.dumps({g: [m.steps_completed for m in trial.iter_metrics(g)] for g in groups}))
"""


def reports_of(d: Deployment, trial_id: int, group: str) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"trialIds": trial_id, "group": group})
    r = d.http.get(f"/api/v1/trials/metrics/trial_metrics?{query}")
    assert r.status_code == 200, r.text[:500]
    return [m for line in r.text.splitlines() for m in json.loads(line)["result"]["metrics"]]


@pytest.mark.parametrize("client", ["ours", "determined", "determined-in-task"])
def test_generic_metrics_fixture_completes_with_every_group(
    deploy: Deploy, client: str, request: pytest.FixtureRequest
) -> None:
    """`determined-in-task`: the task's Python has the real determined 0.38.1, whose own
    Core API reports the groups (ours serves `determined` otherwise)."""
    d = deploy(agents=1, slots=1)
    args: tuple[str, ...] = ("experiment", "create")
    if client == "determined-in-task":
        python = request.getfixturevalue("real_determined_python")
        args += ("--config", f"environment.python={python}")
    args += (str(FIXTURE / "11_generic_metrics.yaml"), str(FIXTURE))
    if client == "ours":
        done = d.det(*args)
    else:
        det = real_det_venv() / "bin" / "det"
        env = {**d.env, "DET_MASTER": d.url}
        done = subprocess.run([str(det), *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    exp_id = max(e["id"] for e in d.get("/api/v1/experiments", limit=1000)["experiments"])

    def running() -> bool:
        state = d.get(f"/api/v1/experiments/{exp_id}")["experiment"]["state"]
        assert state not in ("STATE_ERROR", "STATE_CANCELED", "STATE_COMPLETED"), state
        return state == "STATE_RUNNING"

    wait_for(running, 120, f"experiment {exp_id} to be shown RUNNING")
    exp = finished(d, exp_id, timeout=240)
    assert exp["state"] == "STATE_COMPLETED", d.log_tails()
    (trial,) = trials_of(d, exp_id)
    assert trial["state"] == "STATE_COMPLETED"
    if client == "determined-in-task":  # the real package's own loggers reported the groups
        logs = "\n".join(d.trial_logs(trial["id"]))
        assert "determined.core: report_metrics(group=inf%er en/ce" in logs, logs[-2000:]
        assert "determined.tensorboard" in logs, logs[-2000:]
    for index, group in enumerate(GROUPS):
        got = reports_of(d, trial["id"], group)
        steps = [m["totalBatches"] for m in got]
        assert steps == list(range(index + 1, 101, len(GROUPS))), (group, steps)
        # Determined's wire: the validation group's values under validation_metrics.
        key = "validation_metrics" if group == "validation" else "avg_metrics"
        names = set(got[0]["metrics"][key])
        assert names == {f"z{group}/me.t r%i]\\c_{k}" for k in range(3)}, names
    if client != "ours":
        python = real_det_venv() / "bin" / "python"
        read = subprocess.run(
            [str(python), "-c", SDK_READ, d.url, d.password, str(trial["id"])],
            input=json.dumps(GROUPS), env=d.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert read.returncode == 0, read.stdout + read.stderr
        steps = json.loads(read.stdout.strip().splitlines()[-1])
        assert steps == {g: list(range(i + 1, 101, len(GROUPS))) for i, g in enumerate(GROUPS)}
