"""The real `determined==0.38.1` client's `det notebook|shell` against our master and a real
agent (process runtime): it waits for readiness as it does against Determined, prints the
proxied address, and its shell reaches sshd with `ssh` through `determined.cli.tunnel` (which
sends no credentials: the shell's own key authenticates)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from tests.agent.test_end_to_end import Processes
from tests.compat.test_determined_cli import Det
from tests.conftest import PASSWORD
from tests.support import interactive_cluster
from tests.support.interactive_cluster import login, start_cluster

pytestmark = [pytest.mark.compat, pytest.mark.slow]
procs = interactive_cluster.procs
EXPERIMENT = (
    "name: tb\nentrypoint: python3 x.py\nsearcher: {name: single, metric: loss, max_length: 1}\n"
    "resources: {slots_per_trial: 0}\n"
)
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


async def real_det(det: Det, *args: str, ok: bool = True) -> tuple[int, str]:
    return await asyncio.to_thread(det, *args, ok=ok, DET_USER="admin", DET_PASS=PASSWORD)


async def test_real_client_notebook_and_shell(
    procs: Processes, tmp_path: Path, det_bin: Path
) -> None:
    port = await start_cluster(procs, tmp_path)
    url = f"http://127.0.0.1:{port}"
    det = Det(det_bin, SimpleNamespace(url=url), tmp_path / "detcfg")  # type: ignore[arg-type]

    _, out = await real_det(det, "notebook", "start", "--no-browser")
    assert "Jupyter Notebook is running at" in out, out
    task_id = re.search(rf"/proxy/({UUID})/", out)
    assert task_id is not None, out
    nb = task_id.group(1)
    assert f"{url}/det/interactive/{nb}/jupyter-lab/" in out, out
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        status = await c.get(f"/proxy/{nb}/api/status", headers=admin)
        assert status.status_code == 200, status.text
        page = await c.get(out.split("running at: ")[1].split()[0].removeprefix(url))
        assert page.status_code == 200 and f"/proxy/{nb}/" in page.text

    _, out = await real_det(det, "notebook", "list")
    assert nb in out and "RUNNING" in out, out
    _, out = await real_det(det, "notebook", "logs", nb)
    assert "notebook is ready at" in out, out
    _, out = await real_det(det, "notebook", "kill", nb[:8])
    assert f"Killed notebook {nb}" in out, out

    # TensorBoard over a (paused) experiment's trial: it starts with no event files yet
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        body = {"config": EXPERIMENT, "activate": False}
        r = await c.post("/api/v1/experiments", json=body, headers=admin)
        assert r.status_code == 200, r.text
        exp_id = r.json()["experiment"]["id"]
    _, out = await real_det(det, "tensorboard", "start", str(exp_id), "--no-browser")
    assert "Tensorboard is running at" in out, out
    _, out = await real_det(det, "tensorboard", "list")
    # Its experimentIds column, not a chance digit of its id: the experiment has no trial yet.
    row = next(line for line in out.splitlines() if "TensorBoard" in line)
    assert "RUNNING" in row and f"[{exp_id}]" in row, out

    if not shutil.which("ssh") or not os.path.exists("/usr/sbin/sshd"):
        pytest.skip("needs openssh-client and openssh-server for the shell part")
    code, out = await real_det(det, "shell", "start", "--", "hostname", ok=False)
    assert code == 0 and socket.gethostname() in out, out
    # The real client ignores ssh's exit status (subprocess.run, then exit 0); ours returns it
    # (tests/cli/test_interactive_live.py).
    code, out = await real_det(det, "shell", "start", "--", "echo", "$((6*7))", ok=False)
    assert code == 0 and "42" in out, out
