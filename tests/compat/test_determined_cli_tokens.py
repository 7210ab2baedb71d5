"""The real `det token` 0.38.1 and ours against our master: create, list, describe, edit,
revoke, and `det token login` with the token in place of a password (Determined serves access
tokens only in its enterprise edition; we serve them to everyone)."""

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


def _as_admin(det: Det, *args: str, ok: bool = True) -> tuple[int, str]:
    return det(*args, ok=ok, DET_USER="admin", DET_PASS=PASSWORD)


def test_the_real_client_makes_uses_and_revokes_a_token(det: Det, tmp_path: Path) -> None:
    _, out = _as_admin(det, "token", "create", "-e", "2", "-d", "nightly job")
    token_id = int(re.search(r"TokenID: (\d+)", out).group(1))  # type: ignore[union-attr]
    token = re.search(r"Access-Token: (\S+)", out).group(1)  # type: ignore[union-attr]
    _, out = _as_admin(det, "token", "list")
    assert "nightly job" in out and str(token_id) in out
    _, out = _as_admin(det, "token", "describe", str(token_id))
    assert "nightly job" in out
    _, out = _as_admin(det, "token", "edit", str(token_id), "-d", "weekly job")
    assert "weekly job" in out

    # A fresh config dir: the token is the only credential the real client has.
    fresh = Det(det.bin, _master_of(det), tmp_path / "cfg")
    _, out = fresh("token", "login", token)
    assert "Authenticated as admin" in out
    _, out = fresh("user", "whoami")
    assert "admin" in out

    _as_admin(det, "token", "revoke", str(token_id))
    # the revoked token is refused: the client falls back to asking for a password
    code, out = fresh("user", "whoami", ok=False, DET_PASS="")
    assert code != 0 and "Password for user 'admin'" in out, out


def test_ours_matches(
    running_master: RunningMaster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(tmp_path))
    env = {"DET_MASTER": running_master.url, "DET_USER": "admin", "DET_PASS": PASSWORD}
    runner = CliRunner()
    made = runner.invoke(app, ["token", "create", "-d", "ours", "-e", "-1"], env=env)
    assert made.exit_code == 0, made.output
    token_id = re.search(r"TokenID: (\d+)", made.stdout).group(1)  # type: ignore[union-attr]
    listed = runner.invoke(app, ["tkn", "ls", "admin"], env=env)
    assert listed.exit_code == 0 and "ours" in listed.stdout
    revoked = runner.invoke(app, ["token", "revoke", token_id], env=env)
    assert revoked.exit_code == 0, revoked.output
    gone = runner.invoke(app, ["token", "list"], env=env)
    assert "ours" not in gone.stdout
    shown = runner.invoke(app, ["token", "describe", token_id, "--json"], env=env)
    assert shown.exit_code == 0 and '"revoked": true' in shown.stdout
    bad = runner.invoke(app, ["token", "create", "-e", "0"], env=env)
    assert bad.exit_code != 0


def _master_of(det: Det) -> RunningMaster:
    url = det.env["DET_MASTER"]
    return RunningMaster(url=url, data_dir=Path("."), process=None)  # type: ignore[arg-type]
