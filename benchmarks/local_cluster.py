"""A `det deploy local` deployment for a benchmark: temp data dir, free port, stopped afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from cli.deploy import local

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    url: str
    http: httpx.AsyncClient
    data_dir: Path
    runtime: str

    async def get(self, path: str, **params: Any) -> Any:
        r = await self.http.get(path, params=params or None)
        r.raise_for_status()
        return r.json()

    async def post(self, path: str, body: Any = None) -> Any:
        r = await self.http.post(path, json=body)
        if r.status_code >= 400:
            raise RuntimeError(f"POST {path}: {r.status_code} {r.text[:500]}")
        return r.json() if r.content else None


@contextlib.asynccontextmanager
async def local_cluster(
    workdir: Path, *, agents: int, slots: int, runtime: str
) -> AsyncIterator[Cluster]:
    """`det deploy local up` in a fresh data dir under `workdir`; `down` on the way out."""
    data_dir = workdir / f"deploy-{runtime}-{agents}x{slots}-{time.monotonic_ns()}"
    options = local.LocalOptions(
        data_dir=data_dir, agents=agents, slots_per_agent=slots, runtime=runtime, port=free_port()
    )
    started = await asyncio.to_thread(local.up, options, python=sys.executable, timeout_s=120)
    try:
        headers = {"Authorization": f"Bearer {started.token}"}
        async with httpx.AsyncClient(
            base_url=options.master_url, headers=headers, timeout=60
        ) as http:
            yield Cluster(options.master_url, http, data_dir, started.deployment.runtime)
    finally:
        await asyncio.to_thread(local.down, data_dir, grace_s=5)


def docker_test_image() -> tuple[str, list[dict[str, Any]]] | str:
    """(image, bind_mounts in expconf form) for docker-runtime tasks, or why there is none."""
    if not local.docker_answers():
        return "no Docker engine answers `docker info`"
    sys.path.insert(0, str(REPO))
    try:
        from tests.support.docker_image import ensure_test_image
    except ImportError as exc:
        return f"tests/support/docker_image.py is missing ({exc})"
    try:
        image = ensure_test_image()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        return f"cannot build the test image: {exc}"
    mounts = [
        {"host_path": m.host_path, "container_path": m.container_path, "read_only": m.read_only}
        for m in image.mounts
    ]
    return image.name, mounts
