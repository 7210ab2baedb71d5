"""A real master and a real agent (process runtime) as processes, for interactive tasks."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from controlplane.services.auth import client_hash
from tests.agent.test_end_to_end import Processes, start_master
from tests.support.live_master import free_port


@pytest.fixture
async def procs(tmp_path: Path) -> AsyncIterator[Processes]:
    made = Processes(tmp_path)
    try:
        yield made
    finally:
        await made.stop_all()


async def login(c: httpx.AsyncClient, username: str, password: str) -> dict[str, str]:
    body = {"username": username, "password": client_hash(password), "isHashed": True}
    r = await c.post("/api/v1/auth/login", json=body)
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


async def start_cluster(procs: Processes, tmp_path: Path, advertise: str = "127.0.0.1") -> int:
    """The master's port, once the master answers; the agent registers on its own and
    advertises `advertise` as the address its tasks' services listen on."""
    port = free_port()
    await start_master(procs, port, tmp_path / "master-data")
    await procs.start(
        "agent", sys.executable, "-m", "agent", "--master-host", "127.0.0.1",
        "--master-port", str(port), "--agent-id", "interactive-agent", "--artificial-slots", "1",
        "--work-dir", str(tmp_path / "agent"), "--container-runtime", "process",
        "--advertise-address", advertise,
    )  # fmt: skip
    return port
