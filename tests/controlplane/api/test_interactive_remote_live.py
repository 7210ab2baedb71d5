"""A notebook on an agent that advertises another address than the master's (127.0.0.2, still
loopback): the task listens there, the master's proxy uses the reported address, and a visitor
who reaches that address directly, without the proxy's secret, is refused. A shell's sshd listens
there itself (its key is what keeps others out)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.agent.test_end_to_end import Processes
from tests.cli.test_interactive_live import det
from tests.conftest import PASSWORD
from tests.controlplane.api.test_interactive_live import ready_notebook
from tests.support import interactive_cluster
from tests.support.interactive_cluster import login, start_cluster

pytestmark = pytest.mark.slow
procs = interactive_cluster.procs


def _reported(db: Path, task_id: str, gated: bool = True) -> tuple[str, str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute(
            "SELECT proxy_address, proxy_secret FROM allocations WHERE task_id = ?", (task_id,)
        ).fetchone()
    assert row is not None and row[0] and (bool(row[1]) == gated), row
    return row[0], row[1]


async def test_the_proxy_reaches_the_advertised_address_and_strangers_are_refused(
    procs: Processes, tmp_path: Path
) -> None:
    port = await start_cluster(procs, tmp_path, advertise="127.0.0.2")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        task_id = await ready_notebook(c, admin, {})
        address, secret = _reported(tmp_path / "master-data" / "resolute.db", task_id)
        assert address.startswith("127.0.0.2:"), address

        through = await c.get(f"/proxy/{task_id}/api/status", headers=admin)
        assert through.status_code == 200 and "started" in through.json(), through.text

        direct = f"http://{address}/proxy/{task_id}/api/status"
        async with httpx.AsyncClient(timeout=30) as d:
            refused = await d.get(direct)
            assert refused.status_code == 403, refused.text
            forged = await d.get(direct, headers={"X-Resolute-Proxy-Secret": "x" * 43})
            assert forged.status_code == 403, forged.text
            # the refusal is the gate's, not a broken service: with the secret it answers
            admitted = await d.get(direct, headers={"X-Resolute-Proxy-Secret": secret})
            assert admitted.status_code == 200, admitted.text
        r = await c.post(f"/api/v1/notebooks/{task_id}/kill", headers=admin)
        assert r.status_code == 200, r.text


@pytest.mark.skipif(
    not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")) or not shutil.which("ssh"),
    reason="needs Debian's openssh-server and openssh-client (scripts/setup.sh installs them)",
)
async def test_a_shell_listens_on_the_advertised_address(procs: Processes, tmp_path: Path) -> None:
    port = await start_cluster(procs, tmp_path, advertise="127.0.0.2")
    code, out, err = await det(port, tmp_path, "shell", "start", "--", "echo", "$((6*7))")
    assert code == 0 and out.strip().endswith("42"), (code, out, err)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        [shell] = (await c.get("/api/v1/shells", headers=admin)).json()["shells"]
    address, secret = _reported(tmp_path / "master-data" / "resolute.db", shell["id"], gated=False)
    assert address.startswith("127.0.0.2:") and secret is None, address
