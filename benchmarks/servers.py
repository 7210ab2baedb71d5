"""Server subprocesses (the Resolute master, the MLflow tracking server) and logging in."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks import pg

REPO = Path(__file__).resolve().parent.parent
CLIENT_SALT = "GubPEmmotfiK9TMD6Zdw"  # what the `det` client salts passwords with
PASSWORD = "Bench-Passw0rd!"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A child process in its own session, so stopping it stops its workers too."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    ready_url: str
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            self.argv,
            cwd=REPO,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    async def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=5) as client:
            while time.monotonic() < deadline:
                if self.proc is not None and self.proc.poll() is not None:
                    code = self.proc.returncode
                    raise RuntimeError(f"{self.name} exited with {code}:\n{self.tail()}")
                try:
                    r = await client.get(self.ready_url)
                    if r.status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.25)
        raise RuntimeError(f"{self.name} was not ready after {timeout:.0f}s:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)  # the group we created with start_new_session
            except ProcessLookupError:
                return
            try:
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


def master(database: str, data_dir: Path) -> Server:
    """The real master (`python -m controlplane`) on `database`, listening on 127.0.0.1."""
    port = free_port()
    env = dict(os.environ)
    env.update(
        DET_DB_URL=pg.sqlalchemy_url(database),
        DET_SECURITY_INITIAL_USER_PASSWORD=PASSWORD,
        PYTHONUNBUFFERED="1",
    )
    # BENCH_MASTER_ARGV swaps `-m controlplane` for a wrapper script (profiling experiments).
    launcher = os.environ.get("BENCH_MASTER_ARGV", "-m controlplane").split()
    argv = [sys.executable, *launcher, "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--data-dir", str(data_dir)]
    return Server(
        name="resolute master",
        argv=argv,
        env=env,
        log_path=data_dir / "master.log",
        ready_url=f"http://127.0.0.1:{port}/info",
    )


def base_url(server: Server) -> str:
    return server.ready_url.rsplit("/", 1)[0]


async def login(url: str, username: str = "admin", password: str = PASSWORD) -> str:
    """A bearer token, logging in the way the `det` client does (salted SHA-512, isHashed)."""
    hashed = hashlib.sha512((CLIENT_SALT + password).encode()).hexdigest()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        r = await client.post(
            "/api/v1/auth/login",
            json={"username": username, "password": hashed, "isHashed": True},
        )
        r.raise_for_status()
        return str(r.json()["token"])


async def create_experiment(url: str, token: str, yaml_text: str) -> dict:
    """POST /api/v1/experiments with the YAML text; returns the response body."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        r = await client.post(
            "/api/v1/experiments",
            headers={"Authorization": f"Bearer {token}"},
            json={"config": yaml_text, "activate": True},
        )
        if r.status_code != 200:
            raise RuntimeError(f"creating an experiment failed ({r.status_code}): {r.text}")
        return r.json()
