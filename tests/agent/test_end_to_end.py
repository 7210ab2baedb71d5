"""A real master process and a real agent process: a command runs through the agent's process
runtime and the injected harness launcher, the master is killed with -9 and started again on the
same database, and the command carries on and finishes with its logs shipped.

Why processes: a master restart and a `kill -9` are only real across process boundaries.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.services.auth import client_hash
from tests.conftest import PASSWORD
from tests.support.instance_runner import kill_tasks
from tests.support.live_master import eventually, free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


class Processes:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.procs: list[asyncio.subprocess.Process] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}

    async def start(self, name: str, *argv: str, **env: str) -> asyncio.subprocess.Process:
        with (self.tmp / f"{name}.log").open("ab") as out:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=REPO, env={**self.env, **env}, stdout=out,
                stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    async def stop_all(self) -> None:
        for proc in self.procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), 15)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
        kill_tasks(self.tmp)  # what the agents left running for a reattach that never comes


@pytest.fixture
async def procs(tmp_path: Path) -> AsyncIterator[Processes]:
    made = Processes(tmp_path)
    try:
        yield made
    finally:
        await made.stop_all()


async def start_master(procs: Processes, port: int, data: Path) -> asyncio.subprocess.Process:
    argv = (sys.executable, "-m", "controlplane", "--host", "127.0.0.1", "--port", str(port))
    proc = await procs.start(
        "master", *argv, "--data-dir", str(data), DET_SECURITY_INITIAL_USER_PASSWORD=PASSWORD
    )

    async def up() -> bool:
        try:
            async with httpx.AsyncClient() as c:
                return (await c.get(f"http://127.0.0.1:{port}/info", timeout=2)).status_code == 200
        except httpx.HTTPError:
            assert proc.returncode is None, procs.log("master")
            return False

    await eventually(up, timeout=60, interval=0.2)
    return proc


async def api(port: int, method: str, path: str, body: Any = None) -> Any:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        login = {"username": "admin", "password": client_hash(PASSWORD), "isHashed": True}
        token = (await c.post("/api/v1/auth/login", json=login)).json()["token"]
        r = await c.request(method, path, json=body, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200, f"{method} {path}: {r.status_code} {r.text}"
        return r.json()


async def test_a_command_survives_kill_9_of_the_master(procs: Processes, tmp_path: Path):
    port, data, gate = free_port(), tmp_path / "master-data", tmp_path / "gate"
    master = await start_master(procs, port, data)
    agent = await procs.start(
        "agent", sys.executable, "-m", "agent", "--master-host", "127.0.0.1",
        "--master-port", str(port), "--agent-id", "e2e-agent", "--artificial-slots", "1",
        "--work-dir", str(tmp_path / "agent"), "--container-runtime", "process",
        "--agent-reconnect-attempts", "60", "--agent-reconnect-backoff", "0.5",
    )  # fmt: skip
    script = (
        "import os, time\n"
        "print('before the restart', flush=True)\n"
        f"while not os.path.exists({str(gate)!r}): time.sleep(0.05)\n"
        "print('after the restart', flush=True)\n"
    )
    config = {"entrypoint": ["python3", "-c", script], "resources": {"slots": 1}}
    task_id = (await api(port, "POST", "/api/v1/commands", {"config": config}))["command"]["id"]

    async def state() -> str:
        return (await api(port, "GET", f"/api/v1/commands/{task_id}"))["command"]["state"]

    async def running() -> bool:
        return await state() == "STATE_RUNNING"

    await eventually(running, timeout=60, interval=0.2)

    master.kill()
    await master.wait()
    await asyncio.sleep(1.0)  # the agent notices and starts its tries
    assert agent.returncode is None
    await start_master(procs, port, data)

    async def reconnected() -> bool:
        return procs.log("agent").count("registered with the master") == 2

    await eventually(reconnected, timeout=60, interval=0.2)
    assert await state() == "STATE_RUNNING"
    gate.touch()

    async def finished() -> dict[str, Any] | None:
        cmd = (await api(port, "GET", f"/api/v1/commands/{task_id}"))["command"]
        return cmd if cmd["state"] == "STATE_TERMINATED" else None

    done = await eventually(finished, timeout=60, interval=0.2)
    assert done["exitCode"] == 0, done
    assert agent.returncode is None

    async def shipped() -> list[str]:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            login = {"username": "admin", "password": client_hash(PASSWORD), "isHashed": True}
            token = (await c.post("/api/v1/auth/login", json=login)).json()["token"]
            r = await c.get(
                f"/api/v1/tasks/{task_id}/logs", headers={"Authorization": f"Bearer {token}"}
            )
        text = r.text
        return [w for w in ("before the restart", "after the restart") if w in text]

    async def both_lines() -> bool:
        return len(await shipped()) == 2

    await eventually(both_lines, timeout=30, interval=0.5)
