"""The real `det` 0.38.1 checkpoint commands against our master: list-checkpoints --best,
checkpoint delete (comma-separated, --yes), checkpoint describe of a deleted checkpoint, and
set gc-policy (its preview_gc table, then the PATCH that collects the ended experiment)."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.compat.conftest import PASSWORD, RunningMaster
from tests.compat.test_determined_cli import Det

pytestmark = [pytest.mark.compat, pytest.mark.slow]


@pytest.fixture(scope="module")
def det(det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory):
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


def _config(base: Path) -> str:
    return (
        "name: gc\nentrypoint: python3 train.py\n"
        "searcher: {name: single, metric: loss}\nresources: {slots_per_trial: 0}\n"
        f"checkpoint_storage: {{type: shared_fs, host_path: '{base}', storage_path: s,"
        " save_trial_best: 1, save_trial_latest: 1}\n"
    )


def _state(m: RunningMaster, admin: dict[str, str], ckpt: str) -> str:
    r = httpx.get(f"{m.url}/api/v1/checkpoints/{ckpt}", headers=admin, timeout=30)
    return str(r.json()["checkpoint"]["state"])


def _wait_deleted(m: RunningMaster, admin: dict[str, str], ckpt: str) -> None:
    # The master's GC job is woken by the request; poll its visible outcome.
    deadline = time.monotonic() + 60
    while _state(m, admin, ckpt) != "STATE_DELETED":
        assert time.monotonic() < deadline, f"checkpoint {ckpt} not deleted"
        time.sleep(0.2)


def test_checkpoint_commands(
    det: Det, running_master: RunningMaster, admin: dict[str, str], tmp_path: Path
) -> None:
    m = running_master
    base = tmp_path / "store"

    def post(path: str, body: Any) -> Any:
        r = httpx.post(f"{m.url}{path}", json=body, headers=admin, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    exp_id = post("/api/v1/experiments", {"config": _config(base), "activate": False})[
        "experiment"
    ]["id"]
    r = httpx.get(f"{m.url}/api/v1/experiments/{exp_id}/trials", headers=admin, timeout=30)
    trial_id = r.json()["trials"][0]["id"]
    uuids = []
    for steps, loss in ((10, 0.5), (20, 0.1), (30, 0.9), (40, 0.7)):
        ckpt = str(uuid.uuid4())
        post("/api/v1/checkpoints", {
            "uuid": ckpt, "resources": {"m": "1"}, "metadata": {"steps_completed": steps},
            "training": {"trialId": trial_id},
        })  # fmt: skip
        metrics = {"stepsCompleted": steps, "metrics": {"avgMetrics": {"loss": loss}}}
        post(f"/api/v1/trials/{trial_id}/metrics", {"group": "validation", "metrics": metrics})
        (base / "s" / ckpt).mkdir(parents=True)
        (base / "s" / ckpt / "m").write_text("m")
        uuids.append(ckpt)
    first, best, worse, latest = uuids
    env = {"DET_USER": "admin", "DET_PASS": PASSWORD}

    _, out = det("experiment", "list-checkpoints", str(exp_id), "--best", "1", **env)
    assert best in out and worse not in out

    _, out = det("checkpoint", "delete", f"{first},{worse}", "--yes", **env)
    assert f"Deletion of checkpoints {first},{worse} is in progress" in out
    for ckpt in (first, worse):
        _wait_deleted(m, admin, ckpt)
        assert not (base / "s" / ckpt).exists()
    _, out = det("checkpoint", "describe", worse, **env)
    assert worse in out and "30" in out

    code, out = det("checkpoint", "delete", "not-a-uuid", "--yes", ok=False, **env)
    assert code != 0 and "is not a UUID" in out

    det("experiment", "kill", str(exp_id), **env)
    args = ["experiment", "set", "gc-policy", str(exp_id), "--save-experiment-best", "0",
            "--save-trial-best", "0", "--save-trial-latest", "1"]  # fmt: skip
    _, out = det(*args, stdin="n\n", **env)
    assert best in out and re.search(r"will delete 1 checkpoints with validations", out), out
    assert _state(m, admin, best) == "STATE_COMPLETED"
    _, out = det(*args, "--yes", **env)
    assert "Set GC policy" in out
    _wait_deleted(m, admin, best)
    assert not (base / "s" / best).exists() and (base / "s" / latest / "m").exists()

    (base / "s" / latest / "x.tmp").write_text("scratch")
    _, out = det("checkpoint", "rm", latest, "--glob", "*.tmp", "--yes", **env)
    assert f"Removal of files from checkpoints {latest} is in progress." in out
    deadline = time.monotonic() + 60
    while _state(m, admin, latest) != "STATE_PARTIALLY_DELETED":
        assert time.monotonic() < deadline, "rm --glob did not finish"
        time.sleep(0.2)
    assert not (base / "s" / latest / "x.tmp").exists() and (base / "s" / latest / "m").exists()
