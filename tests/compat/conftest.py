"""A real master process and the real `determined==0.38.1` client in its own venv."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cli.auth import hash_password

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "Compat-Secret1"


def det_venv() -> Path | None:
    path = Path(os.environ.get("DETERMINED_CLIENT_VENV", REPO / ".venv-det"))
    return path if (path / "bin" / "det").exists() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RunningMaster:
    url: str
    data_dir: Path
    process: subprocess.Popen[bytes]

    @property
    def db_url(self) -> str:
        return f"sqlite+aiosqlite:///{self.data_dir / 'resolute.db'}"


@contextlib.contextmanager
def master_process(
    tmp_path_factory: pytest.TempPathFactory, env: dict[str, str] | None = None
) -> Iterator[RunningMaster]:
    """`python -m controlplane` on a free loopback port with a data dir of its own, the admin
    password PASSWORD and `env` (DET_* settings) added to the environment; stopped on exit."""
    data = tmp_path_factory.mktemp("master")
    port = free_port()
    full_env = {**os.environ, "DET_SECURITY_INITIAL_USER_PASSWORD": PASSWORD, **(env or {})}
    log = open(data / "master.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "controlplane"),
            *("--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data)),
        ],
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/info", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
        if proc.poll() is not None:
            raise RuntimeError((data / "master.log").read_text())
    try:
        yield RunningMaster(url=url, data_dir=data, process=proc)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


@pytest.fixture(scope="module")
def running_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningMaster]:
    with master_process(tmp_path_factory) as master:
        yield master


@pytest.fixture(scope="module")
def det_bin() -> Path:
    venv = det_venv()
    if venv is None:
        reason = "the determined==0.38.1 client venv is missing (.ci/run creates .venv-det)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return venv / "bin"


@pytest.fixture(scope="module")
def admin(running_master: RunningMaster) -> dict[str, str]:
    """Headers with an admin token for calling the master's API directly."""
    body = {"username": "admin", "password": hash_password(PASSWORD), "isHashed": True}
    reply = httpx.post(f"{running_master.url}/api/v1/auth/login", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    return {"Authorization": f"Bearer {reply.json()['token']}"}


async def run(det: Callable[..., tuple[int, str]], *args: str, ok: bool = True) -> tuple[int, str]:
    """The real `det ARGS` (a test module's `det` fixture) as admin (DET_USER/DET_PASS), off
    the event loop."""
    return await asyncio.to_thread(det, *args, ok=ok, DET_USER="admin", DET_PASS=PASSWORD)
