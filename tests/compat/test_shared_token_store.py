"""Our `det` and the real `det` 0.38.1 share one token store (auth.json) without harming it.

The real client deletes the whole file, every master's tokens with it, when the file fails its
validation (e.g. `"active_user": null`). Both orders: ours logs in and out and the real one
reads and writes after it, and the reverse.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.compat.conftest import PASSWORD, RunningMaster

pytestmark = [pytest.mark.compat, pytest.mark.slow]

OURS = Path(sys.executable).with_name("det")
OTHER_MASTER = "http://127.0.0.1:1"  # a second master's entry that must survive everything


class Client:
    """One `det` (ours or the real one) on the shared config directory."""

    def __init__(self, det: Path, master: RunningMaster, config_dir: Path) -> None:
        self.det = det
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
            "DET_MASTER": master.url,
            "DET_DEBUG_CONFIG_PATH": str(config_dir),
        }

    def __call__(self, *args: str, stdin: str | None = None) -> tuple[int, str]:
        proc = subprocess.run(
            [str(self.det), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            start_new_session=True,  # no controlling tty: getpass reads stdin
        )
        return proc.returncode, proc.stdout + proc.stderr

    def ok(self, *args: str, stdin: str | None = None) -> str:
        code, out = self(*args, stdin=stdin)
        assert code == 0, f"{self.det} {' '.join(args)} failed:\n{out}"
        assert "corrupt" not in out.lower(), out
        return out

    def login(self) -> None:
        self.ok("user", "login", "admin", stdin=PASSWORD + "\n")

    def whoami(self) -> str:
        return self.ok("user", "whoami")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """A config directory whose auth.json already holds another master's token."""
    seeded = {"version": 2, "masters": {OTHER_MASTER: {"tokens": {"bob": "bob-token"}}}}
    (tmp_path / "auth.json").write_text(json.dumps(seeded))
    return tmp_path


@pytest.fixture
def ours(running_master: RunningMaster, store_dir: Path) -> Client:
    return Client(OURS, running_master, store_dir)


@pytest.fixture
def real(det_bin: Path, running_master: RunningMaster, store_dir: Path) -> Client:
    return Client(det_bin / "det", running_master, store_dir)


def stored(store_dir: Path, master: RunningMaster) -> dict[str, Any]:
    data = json.loads((store_dir / "auth.json").read_text())
    assert set(data) == {"version", "masters"} and data["version"] == 2
    for entry in data["masters"].values():
        assert set(entry) <= {"active_user", "tokens"}
        assert isinstance(entry.get("active_user", ""), str), entry
    assert data["masters"][OTHER_MASTER] == {"tokens": {"bob": "bob-token"}}
    return data["masters"].get(master.url, {})


def test_ours_logs_in_and_out_then_the_real_client(
    ours: Client, real: Client, store_dir: Path, running_master: RunningMaster
) -> None:
    ours.login()
    assert stored(store_dir, running_master)["active_user"] == "admin"
    assert "logged in as user 'admin'" in real.whoami()  # reads our token

    ours.ok("user", "logout")
    code, out = real("user", "whoami")  # logged out: refused, but the store survives
    assert code != 0 and "corrupt" not in out.lower(), out
    assert stored(store_dir, running_master) == {"tokens": {}}

    real.login()
    assert "logged in as user 'admin'" in ours.whoami()  # reads the real client's token
    real.ok("user", "logout")
    assert stored(store_dir, running_master) == {"tokens": {}}


def test_the_real_client_logs_in_and_out_then_ours(
    ours: Client, real: Client, store_dir: Path, running_master: RunningMaster
) -> None:
    real.login()
    assert "logged in as user 'admin'" in ours.whoami()
    real.ok("user", "logout")
    assert stored(store_dir, running_master) == {"tokens": {}}
    code, out = ours("user", "whoami")
    assert code != 0, out

    ours.login()
    token = stored(store_dir, running_master)["tokens"]["admin"]
    assert "logged in as user 'admin'" in real.whoami()
    assert stored(store_dir, running_master)["tokens"]["admin"] == token  # reused, not replaced
    ours.ok("user", "logout")
    assert stored(store_dir, running_master) == {"tokens": {}}
    real.login()
    assert stored(store_dir, running_master)["active_user"] == "admin"
