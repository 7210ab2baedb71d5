"""The real `det config-policies` 0.38.1 and ours against our master: set from a file,
describe, and the policy holding on a submission; delete; a user may not set."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.compat.conftest import PASSWORD, RunningMaster
from tests.compat.test_determined_cli import Det
from tests.controlplane.services.scheduling.conftest import experiment_yaml

pytestmark = [pytest.mark.compat]

POLICY = "constraints:\n  resources:\n    max_slots: 1\n"


@pytest.fixture(scope="module")
def det(
    det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory
) -> Det:
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


def test_the_real_client(
    det: Det, running_master: RunningMaster, admin: dict[str, str], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = {"DET_USER": "admin", "DET_PASS": PASSWORD}
    _, out = det("config-policies", "set", "experiment", str(policy), **env)
    assert "max_slots: 1" in out
    _, out = det("cp", "describe", "experiment", "--json", **env)
    assert '"max_slots": 1' in out
    r = httpx.post(
        f"{running_master.url}/api/v1/experiments",
        headers=admin,
        json={"config": experiment_yaml("two", slots=2), "activate": False},
    )
    assert r.status_code == 400 and "above the limit of 1" in r.text
    _, out = det("cp", "set", "tasks", str(policy), "-w", "Uncategorized", **env)
    assert "max_slots: 1" in out
    code, _ = det("cp", "set", "experiment", str(policy), ok=False,
                  DET_USER="determined", DET_PASS=PASSWORD)  # fmt: skip
    assert code != 0
    det("config-policies", "delete", "experiment", **env)
    det("config-policies", "delete", "tasks", "-w", "Uncategorized", **env)
    _, out = det("cp", "describe", "experiment", **env)
    assert "max_slots" not in out


def test_ours(
    running_master: RunningMaster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(tmp_path))
    policy = tmp_path / "p.yaml"
    policy.write_text(POLICY)
    env = {"DET_MASTER": running_master.url, "DET_USER": "admin", "DET_PASS": PASSWORD}
    runner = CliRunner()
    done = runner.invoke(app, ["cp", "set", "tasks", str(policy)], env=env)
    assert done.exit_code == 0 and "max_slots: 1" in done.stdout, done.output
    shown = runner.invoke(app, ["config-policies", "describe", "tasks", "--json"], env=env)
    assert '"max_slots": 1' in shown.stdout
    gone = runner.invoke(app, ["cp", "delete", "tasks"], env=env)
    assert gone.exit_code == 0, gone.output
    bad = runner.invoke(app, ["cp", "set", "tasks", str(tmp_path / "missing.yaml")], env=env)
    assert bad.exit_code != 0 and "Error opening file" in bad.output
