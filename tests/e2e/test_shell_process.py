"""`det shell start` on `det deploy local`'s process runtime (issue 39, finding 9), with our `det`
and with the real determined==0.38.1 client (whose shell goes through
`python -m determined.cli.tunnel`, without credentials: the shell's key authenticates); a
context's startup-hook.sh is sourced first and what it exports reaches the session (finding
7)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import Deploy

REPO = Path(__file__).resolve().parents[2]
DET_BIN = Path(os.environ.get("DETERMINED_CLIENT_VENV", REPO / ".venv-det")) / "bin" / "det"

pytestmark = pytest.mark.slow


def test_shell_start_on_the_process_runtime(deploy: Deploy, tmp_path: Path) -> None:
    if shutil.which("ssh") is None or shutil.which("sshd", path="/usr/sbin:/usr/bin") is None:
        pytest.skip("openssh-server and openssh-client are needed")
    d = deploy(agents=1, slots=1)
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "startup-hook.sh").write_text('export HOOKED="from the hook"\n')
    ran = d.det(
        "shell", "start", "-c", str(context), "--", "echo", "shell says $((6 * 7)), $HOOKED",
        timeout=180,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # the startup hook was sourced before sshd, and its exports reach the session
    assert "shell says 42, from the hook" in ran.stdout

    if not DET_BIN.exists():
        return
    real = subprocess.run(
        [str(DET_BIN), "-m", d.url, "shell", "start", "--", "echo", "real client 42"],
        env={**d.env, "DET_DEBUG_CONFIG_PATH": str(tmp_path / "real-det")},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert real.returncode == 0, real.stdout + real.stderr
    assert "real client 42" in real.stdout
