"""The real `det experiment|trial set log-retention` 0.38.1 and ours against our master: the
days reach the trial (read back as the web UI does), out-of-range days are refused."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.compat.conftest import PASSWORD, RunningMaster
from tests.compat.test_determined_cli import Det
from tests.controlplane.services.scheduling.conftest import experiment_yaml

pytestmark = [pytest.mark.compat]


@pytest.fixture(scope="module")
def det(
    det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory
) -> Det:
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


@pytest.fixture(scope="module")
def trial(running_master: RunningMaster, admin: dict[str, str]) -> tuple[int, int]:
    url = running_master.url
    r = httpx.post(
        f"{url}/api/v1/experiments", headers=admin, json={"config": experiment_yaml("ret")}
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]["id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        trials = httpx.get(f"{url}/api/v1/experiments/{exp}/trials", headers=admin).json()
        if trials["trials"]:
            return exp, trials["trials"][0]["id"]
        time.sleep(0.2)
    raise AssertionError("no trial")


def _left(master: RunningMaster, admin: dict[str, str], trial: int) -> int:
    r = httpx.get(f"{master.url}/api/v1/trials/{trial}/remaining_log_retention_days", headers=admin)
    return r.json()["remainingDays"]


def test_the_real_client(
    det: Det, trial: tuple[int, int], running_master: RunningMaster, admin: dict[str, str]
) -> None:
    exp, t = trial
    env = {"DET_USER": "admin", "DET_PASS": PASSWORD}
    det("experiment", "set", "log-retention", str(exp), "--days", "12", **env)
    assert _left(running_master, admin, t) == 12
    det("trial", "set", "log-retention", str(t), "--forever", **env)
    assert _left(running_master, admin, t) == -1
    code, out = det("e", "set", "log-retention", str(exp), "--days", "40000", ok=False, **env)
    assert code != 0 and "32767" in out


def test_ours(
    trial: tuple[int, int],
    running_master: RunningMaster,
    admin: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    exp, t = trial
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(tmp_path))
    env = {"DET_MASTER": running_master.url, "DET_USER": "admin", "DET_PASS": PASSWORD}
    runner = CliRunner()
    done = runner.invoke(app, ["e", "set", "log-retention", str(exp), "--days", "5"], env=env)
    assert done.exit_code == 0, done.output
    assert _left(running_master, admin, t) == 5
    done = runner.invoke(app, ["t", "set", "log-retention", str(t), "--forever"], env=env)
    assert done.exit_code == 0, done.output
    assert _left(running_master, admin, t) == -1
    bad = runner.invoke(app, ["t", "set", "log-retention", str(t)], env=env)
    assert bad.exit_code != 0 and "--days" in bad.output
