"""One fixture, ``box``, that gives a contract test a runtime of each kind and what it needs.

The docker leg runs against the engine that answers on this machine (CI starts one); it is
skipped, with the reason shown, only when none answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent.protocol import Mount
from agent.runtimes import docker_available, make_runtime
from agent.runtimes.base import RUN_DIR_IN_CONTAINER, ContainerRuntime, RunRequest
from tests.support.docker_image import ensure_test_image

_DOCKER_SKIP = None if docker_available() else "no Docker engine answers on this machine"


@dataclass
class Box:
    """A runtime under test, a fresh agent id, and helpers that hide where the kinds differ."""

    kind: str
    runtime: ContainerRuntime
    state_dir: Path
    tmp: Path
    agent_id: str
    image: str = ""
    image_mounts: tuple[Mount, ...] = ()
    task_python: str = ""
    others: list[ContainerRuntime] = field(default_factory=list)

    def request(self, *argv: str, **overrides: object) -> RunRequest:
        """A request to run argv (``python3`` is a Python either way) with its own run dir."""
        container_id = overrides.pop("container_id", None) or f"t{uuid.uuid4().hex[:12]}-0"
        run_dir = self.tmp / "runs" / str(container_id)
        (run_dir / "pylib").mkdir(parents=True, exist_ok=True)
        mounts = (*self.image_mounts, *overrides.pop("mounts", ()))
        fields: dict[str, object] = {
            "container_id": container_id,
            "agent_id": self.agent_id,
            "argv": argv,
            "run_dir": run_dir,
            "image": self.image,
            "mounts": mounts,
            **overrides,
        }
        return RunRequest(**fields)  # type: ignore[arg-type]

    def run_dir_seen_by_task(self, request: RunRequest) -> str:
        return RUN_DIR_IN_CONTAINER if self.kind == "docker" else str(request.run_dir.absolute())

    def mount_target(self, host_path: Path) -> str:
        """Where a mount of host_path appears to the task (process: where it is)."""
        return "/mnt/resolute-test" if self.kind == "docker" else str(host_path)

    def fresh_runtime(self) -> ContainerRuntime:
        """A new runtime object over the same containers, as after an agent restart."""
        other = make_runtime(self.kind, state_dir=self.state_dir, task_python=self.task_python)
        self.others.append(other)
        return other


@pytest.fixture(params=["process", "docker"])
async def box(
    request: pytest.FixtureRequest, tmp_path: Path, task_venv: Path
) -> AsyncIterator[Box]:
    kind = request.param
    image, image_mounts = "", ()
    if kind == "docker":
        if _DOCKER_SKIP:
            pytest.skip(_DOCKER_SKIP)
        test_image = ensure_test_image()
        image, image_mounts = test_image.name, test_image.mounts
    state_dir = tmp_path / "state"
    box = Box(
        kind=kind,
        runtime=make_runtime(kind, state_dir=state_dir, task_python=str(task_venv)),
        state_dir=state_dir,
        tmp=tmp_path,
        agent_id=f"agent-{uuid.uuid4().hex[:8]}",
        image=image,
        image_mounts=image_mounts,
        task_python=str(task_venv),
    )
    try:
        yield box
    finally:
        # Whatever a test left behind, running or not, goes (killed first by remove).
        with contextlib.suppress(Exception):
            for found in await box.runtime.find(box.agent_id):
                await box.runtime.remove(found.container_id)
        for runtime in (box.runtime, *box.others):
            await runtime.close()


async def eventually(check: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def collect_logs(runtime: ContainerRuntime, container_id: str) -> dict[str, bytes]:
    out: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
    async for stream, chunk in runtime.logs(container_id):
        assert isinstance(chunk, bytes)
        out[stream] += chunk
    return {k: bytes(v) for k, v in out.items()}
