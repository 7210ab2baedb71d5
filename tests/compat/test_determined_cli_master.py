"""The real `det master cluster-message set|get|clear` and `det master config show|set` 0.38.1
and ours against our master, and the message in `det master info` for every user."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.compat.conftest import PASSWORD, RunningMaster
from tests.compat.test_determined_cli import Det

pytestmark = [pytest.mark.compat]


@pytest.fixture(scope="module")
def det(
    det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory
) -> Det:
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


def _admin(det: Det, *args: str, ok: bool = True) -> tuple[int, str]:
    return det(*args, ok=ok, DET_USER="admin", DET_PASS=PASSWORD)


def test_the_real_client_sets_reads_and_clears_the_message(det: Det) -> None:
    _admin(det, "master", "cluster-message", "set", "-m", "upgrade tonight", "-d", "3h")
    _, out = _admin(det, "master", "cluster-message", "get")
    assert "upgrade tonight" in out
    _, out = _admin(det, "master", "info")
    assert "upgrade tonight" in out
    code, out = _admin(
        det, "master", "cluster-message", "set", "-m", "x", "-e", "yesterday", ok=False
    )
    assert code != 0 and "RFC-3339" in out
    _admin(det, "master", "cluster-message", "clear")
    _, out = _admin(det, "master", "cluster-message", "get")
    assert "upgrade tonight" not in out


def test_ours(
    running_master: RunningMaster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(tmp_path))
    env = {"DET_MASTER": running_master.url, "DET_USER": "admin", "DET_PASS": PASSWORD}
    runner = CliRunner()
    done = runner.invoke(
        app, ["master", "cluster-message", "set", "-m", "ours", "-d", "1h"], env=env
    )
    assert done.exit_code == 0, done.output
    got = runner.invoke(app, ["master", "cluster-message", "get", "--json"], env=env)
    assert got.exit_code == 0 and '"ours"' in got.stdout
    both = ["master", "cluster-message", "set", "-m", "x", "-e", "2099-01-01T00:00:00Z", "-d", "1h"]
    bad = runner.invoke(app, both, env=env)
    assert bad.exit_code != 0 and "mutually exclusive" in bad.output
    cleared = runner.invoke(app, ["master", "cluster-message", "clear"], env=env)
    assert cleared.exit_code == 0, cleared.output
    got = runner.invoke(app, ["master", "cluster-message", "get", "--json"], env=env)
    assert "ours" not in got.stdout


def test_the_real_client_shows_the_config_and_sets_the_log_level(
    det: Det, running_master: RunningMaster
) -> None:
    _, out = _admin(det, "master", "config", "show", "--json")
    assert '"log"' in out
    _admin(det, "master", "config", "set", "--log.level", "DEBUG")
    _admin(det, "master", "config", "set", "--log.level", "INFO")
    code, out = det("master", "config", "set", "--log.level", "DEBUG", ok=False,
                    DET_USER="determined", DET_PASS=PASSWORD)  # fmt: skip
    assert code != 0
    log = (running_master.data_dir / "master.log").read_text()
    assert "log level set to LOG_LEVEL_DEBUG by admin" in log


def test_ours_config(
    running_master: RunningMaster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(tmp_path))
    env = {"DET_MASTER": running_master.url, "DET_USER": "admin", "DET_PASS": PASSWORD}
    runner = CliRunner()
    for args in (["master", "config"], ["master", "config", "show", "--json"]):
        done = runner.invoke(app, args, env=env)
        assert done.exit_code == 0 and "log" in done.stdout, done.output
    done = runner.invoke(app, ["master", "config", "set", "--log.level", "info"], env=env)
    assert done.exit_code == 0, done.output
    bad = runner.invoke(app, ["master", "config", "set", "--log.level", "loud"], env=env)
    assert bad.exit_code != 0


def test_master_logs_real_and_ours(
    det: Det, running_master: RunningMaster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, out = _admin(det, "master", "logs", "--tail", "20")
    entries = re.findall(r"^\d{4}-\d\d-\d\dT\S+ \[\w+\]: ", out, flags=re.M)
    assert " [INFO]: " in out and 0 < len(entries) <= 20  # a message may span lines
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(tmp_path))
    env = {"DET_MASTER": running_master.url, "DET_USER": "admin", "DET_PASS": PASSWORD}
    done = CliRunner().invoke(app, ["master", "logs", "--tail", "5"], env=env)
    assert done.exit_code == 0 and "[LOG_LEVEL_" in done.stdout, done.output
    assert len(re.findall(r"^\S+ \[LOG_LEVEL_\w+\]: ", done.stdout, flags=re.M)) == 5
