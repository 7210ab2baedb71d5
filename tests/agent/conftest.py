"""Agent test fixtures: settings for a loopback master, the process runtime, a running daemon.

Tasks run through a stand-in harness package (its launcher just execs the command), so these
tests exercise the agent's injection of `harness.exec.launch` without the real launcher's
context download and log shipping.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.config import AgentSettings, load_settings
from agent.daemon import Daemon
from agent.devices import artificial_devices
from agent.protocol import Container, ContainerState, StartContainer, TaskSpec
from agent.runtimes.process import ProcessRuntime
from agent.task_venv import ensure_task_venv

LAUNCH_STANDIN = textwrap.dedent(
    """
    import os, sys
    # Stand-in for the harness launcher: record that it ran, then become the task.
    open(os.path.join(os.environ["DET_RUN_DIR"], "launched-by-standin"), "w").close()
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    except FileNotFoundError:
        print(f"launch: {sys.argv[1]}: not found", file=sys.stderr)  # as a shell says it
        sys.exit(127)
    """
)


@pytest.fixture
def standin_harness(tmp_path: Path) -> Path:
    root = tmp_path / "standin" / "harness"
    (root / "exec").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "exec" / "__init__.py").write_text("")
    (root / "exec" / "launch.py").write_text(LAUNCH_STANDIN)
    (root / "_sitecustomize.py").write_text("")  # pylib carries one (agent/run_dir.py)
    return root


def agent_settings(port: int, work_dir: Path, **extra: Any) -> AgentSettings:
    values: dict[str, Any] = {
        "master_host": "127.0.0.1",
        "master_port": port,
        "agent_id": "agent-under-test",
        "artificial_slots": 2,
        "work_dir": work_dir,
        "container_runtime": "process",
        "agent_reconnect_attempts": 20,
        "agent_reconnect_backoff": 0.1,
    }
    values.update(extra)
    return load_settings(**values)


def start_message(
    container_id: str, argv: list[str], *, slots: tuple[int, ...] = (0,), **spec: Any
) -> StartContainer:
    allocation_id = container_id.rsplit("-", 1)[0]
    devices = tuple(d for d in artificial_devices(2, "agent-under-test") if d.id in slots)
    return StartContainer(
        container=Container(id=container_id, state=ContainerState.ASSIGNED, devices=devices),
        spec=TaskSpec(
            allocation_id=allocation_id,
            task_id=allocation_id.split(".")[0],
            task_type="COMMAND",
            slots=len(devices),
            argv=tuple(argv),
            environment={"DET_TASK_ID": allocation_id.split(".")[0], "USER_VAR": "from-user"},
            **spec,
        ),
    )


def py(code: str) -> list[str]:
    """A task command: the interpreter (the process runtime maps python3 to the task's) + code."""
    return ["python3", "-c", textwrap.dedent(code)]


@dataclass
class RunningAgent:
    daemon: Daemon
    task: asyncio.Task[int]
    runtime: ProcessRuntime

    async def exit_code(self, timeout: float = 30.0) -> int:
        return await asyncio.wait_for(asyncio.shield(self.task), timeout)


StartAgent = Callable[..., "contextlib.AbstractAsyncContextManager[RunningAgent]"]


@pytest.fixture(scope="session")
def task_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One task venv for the session's tasks, layered over this interpreter's packages as the
    agent's own task venv is (made once: tests that are not about it need not wait for it)."""
    return ensure_task_venv(tmp_path_factory.mktemp("task-python") / "task-venv").path


@pytest.fixture
def start_agent(tmp_path: Path, standin_harness: Path, task_venv: Path) -> Callable[..., Any]:
    @contextlib.asynccontextmanager
    async def start(port: int, **extra: Any) -> AsyncIterator[RunningAgent]:
        extra = {"task_python": str(task_venv), **extra}
        settings = agent_settings(port, tmp_path / "agent", **extra)
        runtime = ProcessRuntime(settings.effective_work_dir / "process")
        devices = artificial_devices(settings.artificial_slots, settings.agent_id)
        daemon = Daemon(settings, runtime, devices, harness=lambda: standin_harness)
        task = asyncio.ensure_future(daemon.run())
        try:
            yield RunningAgent(daemon, task, runtime)
        finally:
            daemon.stop()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 15)
            # The agent leaves its containers running on purpose; the test must not.
            for found in await runtime.find(settings.agent_id):
                await runtime.remove(found.container_id)
            await runtime.close()

    return start


@pytest.fixture
def python() -> str:
    return sys.executable
