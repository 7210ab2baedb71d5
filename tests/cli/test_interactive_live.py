"""Our `det shell|notebook|tensorboard` against a real master and agent (process runtime).

`det shell start -- CMD` connects with the real `ssh` through the master's WebSocket proxy to
the task's sshd, prints CMD's output and exits with its code.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
from pathlib import Path

import httpx
import pytest

from tests.agent.test_end_to_end import Processes
from tests.conftest import PASSWORD
from tests.support import interactive_cluster
from tests.support.interactive_cluster import login, start_cluster

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")) or not shutil.which("ssh"),
        reason="needs Debian's openssh-server and openssh-client (scripts/setup.sh installs them)",
    ),
]
procs = interactive_cluster.procs
REPO = Path(__file__).resolve().parents[2]


async def det(port: int, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
        "DET_MASTER": f"http://127.0.0.1:{port}",
        "DET_USER": "admin",
        "DET_PASS": PASSWORD,
        "DET_DEBUG_CONFIG_PATH": str(tmp_path / "detcfg"),
        "PYTHONPATH": str(REPO),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", *args, env=env, cwd=REPO,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    return proc.returncode or 0, out.decode(), err.decode()


async def all_task_logs(port: int) -> str:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        shells = (await c.get("/api/v1/shells", headers=admin)).json()["shells"]
        texts = [(await c.get(f"/api/v1/tasks/{s['id']}/logs", headers=admin)).text for s in shells]
    return "\n".join(texts)


async def test_shell_start_runs_a_command_and_returns_its_exit_code(
    procs: Processes, tmp_path: Path
) -> None:
    port = await start_cluster(procs, tmp_path)
    code, out, err = await det(port, tmp_path, "shell", "start", "--", "hostname")
    assert code == 0, (out, err, await all_task_logs(port))
    assert out.strip() == socket.gethostname(), (out, err)

    code, out, err = await det(port, tmp_path, "shell", "start", "--", "echo", "hi;", "exit", "7")
    assert code == 7 and out.strip() == "hi", (code, out, err)

    code, out, err = await det(port, tmp_path, "shell", "list")
    assert code == 0 and out.count("RUNNING") == 2, (out, err)

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        shells = (await c.get("/api/v1/shells", headers=admin)).json()["shells"]
    code, out, err = await det(
        port, tmp_path, "shell", "open", shells[0]["id"], "--", "echo", "again"
    )
    assert code == 0 and out.strip() == "again", (code, out, err)
    code, out, err = await det(port, tmp_path, "shell", "show_ssh_command", shells[0]["id"])
    assert code == 0 and "ProxyCommand=" in out and "cli.tunnel" in out, (out, err)
    code, out, err = await det(port, tmp_path, "shell", "kill", *(s["id"] for s in shells))
    assert code == 0 and out.count("Killed shell") == 2, (out, err)
