"""The real `determined==0.38.1` client against our master: `det experiment label add|remove`,
`set name|description`, `wait`, `delete` and `delete-tb-files` (unchanged, as Determined's
users script them), and its bindings for PutExperimentLabel, DeleteExperimentLabel and
GetExperimentLabels parse our replies."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.compat.conftest import PASSWORD, RunningMaster
from tests.compat.test_determined_cli import Det
from tests.controlplane.services.scheduling.conftest import experiment_yaml

pytestmark = [pytest.mark.compat]

CREDS = {"DET_USER": "admin", "DET_PASS": PASSWORD}

LABELS = r"""
import json, os, sys, warnings
warnings.simplefilter("ignore", FutureWarning)
from determined.common.api import authentication, bindings
sess = authentication.login(os.environ["MASTER"], "admin", os.environ["PASSWORD"])
exp = int(sys.argv[1])
put = bindings.put_PutExperimentLabel(sess, experimentId=exp, label="grou%p c/x")
put2 = bindings.put_PutExperimentLabel(sess, experimentId=exp, label="two")
gone = bindings.delete_DeleteExperimentLabel(sess, experimentId=exp, label="two")
used = bindings.get_GetExperimentLabels(sess)
print("RESULT " + json.dumps([list(put.labels), list(put2.labels), list(gone.labels),
                              list(used.labels)]))
"""


@pytest.fixture(scope="module")
def det(
    det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory
) -> Det:
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


def _experiment(master: RunningMaster, admin: dict[str, str], name: str) -> int:
    body = {"config": experiment_yaml(name), "activate": True}
    r = httpx.post(f"{master.url}/api/v1/experiments", headers=admin, json=body)
    assert r.status_code == 200, r.text
    return r.json()["experiment"]["id"]


def _exp(master: RunningMaster, admin: dict[str, str], exp: int) -> dict[str, object]:
    return httpx.get(f"{master.url}/api/v1/experiments/{exp}", headers=admin).json()["experiment"]


def test_the_real_det_labels_name_description(
    det: Det, running_master: RunningMaster, admin: dict[str, str]
) -> None:
    exp = _experiment(running_master, admin, "meta")
    _, out = det("e", "label", "add", str(exp), "nightly", **CREDS)
    assert f"Added label 'nightly' to experiment {exp}" in out
    det("e", "label", "add", str(exp), "b", **CREDS)
    det("e", "label", "remove", str(exp), "b", **CREDS)
    _, out = det("e", "set", "name", str(exp), "renamed", **CREDS)
    assert f"Set name of experiment {exp} to 'renamed'" in out
    det("e", "set", "description", str(exp), "about it", **CREDS)
    got = _exp(running_master, admin, exp)
    assert (got["labels"], got["name"], got["description"]) == (["nightly"], "renamed", "about it")


def test_the_real_det_wait_exits_1_for_a_killed_experiment(
    det: Det, running_master: RunningMaster, admin: dict[str, str]
) -> None:
    exp = _experiment(running_master, admin, "waited")
    det("e", "kill", str(exp), **CREDS)
    deadline = time.monotonic() + 30
    while _exp(running_master, admin, exp)["state"] != "STATE_CANCELED":
        assert time.monotonic() < deadline, _exp(running_master, admin, exp)["state"]
        time.sleep(0.2)
    code, _ = det("e", "wait", str(exp), "--polling-interval", "1", ok=False, **CREDS)
    assert code == 1


def test_the_real_bindings_parse_our_labels(
    det_bin: Path, running_master: RunningMaster, admin: dict[str, str], tmp_path: Path
) -> None:
    exp = _experiment(running_master, admin, "bound")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
        "MASTER": running_master.url,
        "PASSWORD": PASSWORD,
        "DET_DEBUG_CONFIG_PATH": str(tmp_path / "cfg"),
    }
    proc = subprocess.run(
        [str(det_bin / "python"), "-c", LABELS, str(exp)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    put, put2, gone, used = json.loads(line.removeprefix("RESULT "))
    assert put == ["grou%p c/x"]
    assert put2 == ["grou%p c/x", "two"]
    assert gone == ["grou%p c/x"]
    assert "grou%p c/x" in used and "two" not in used


def test_the_real_det_deletes_an_ended_experiment(
    det: Det, running_master: RunningMaster, admin: dict[str, str]
) -> None:
    exp = _experiment(running_master, admin, "deleted")
    code, out = det("e", "delete", str(exp), "--yes", ok=False, **CREDS)
    assert code != 0 and "only ended experiments" in out
    det("e", "kill", str(exp), **CREDS)
    deadline = time.monotonic() + 30
    while _exp(running_master, admin, exp)["state"] != "STATE_CANCELED":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    det("e", "delete-tb-files", str(exp), **CREDS)
    _, out = det("e", "delete", str(exp), "--yes", **CREDS)
    assert f"Deletion of experiment {exp} is in progress" in out
    r = httpx.get(f"{running_master.url}/api/v1/experiments/{exp}", headers=admin)
    assert r.status_code == 404
