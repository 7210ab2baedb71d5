"""The daemon with the docker runtime: the injected harness runs inside a real container, and a
running container survives a master restart. Needs the Docker engine CI starts (skipped, with the
reason, where none answers) and the locally built test image (no registry is reachable)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent.daemon import Daemon
from agent.devices import artificial_devices
from agent.protocol import Container, ContainerState, Mount
from agent.runtimes import docker_available, make_runtime
from agent.runtimes.base import RUN_DIR_IN_CONTAINER
from tests.agent.conftest import RunningAgent, agent_settings, start_message
from tests.agent.test_daemon import gated_task, release, task_saw
from tests.support.docker_image import ensure_test_image
from tests.support.fake_master import fake_master

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not docker_available(), reason="no Docker engine answers on this machine"),
]
RUNNING, TERMINATED = ContainerState.RUNNING, ContainerState.TERMINATED


@pytest.fixture
def docker_agent(tmp_path: Path) -> Callable[..., Any]:
    agent_id = f"docker-agent-{uuid.uuid4().hex[:8]}"

    @contextlib.asynccontextmanager
    async def start(port: int) -> AsyncIterator[RunningAgent]:
        settings = agent_settings(
            port, tmp_path / "agent", agent_id=agent_id, container_runtime="docker"
        )
        runtime = make_runtime("docker", state_dir=tmp_path / "unused")
        devices = artificial_devices(2, agent_id)
        daemon = Daemon(settings, runtime, devices)
        task = asyncio.ensure_future(daemon.run())
        try:
            yield RunningAgent(daemon, task, runtime)  # type: ignore[arg-type]
        finally:
            daemon.stop()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 15)
            for found in await runtime.find(agent_id):
                await runtime.remove(found.container_id)
            await runtime.close()

    return start


def docker_start(cid: str, argv: list[str], tmp_path: Path) -> Any:
    image = ensure_test_image()
    # The gated task talks to the test through tmp_path, mounted at the same path.
    share = Mount(host_path=str(tmp_path), container_path=str(tmp_path))
    return start_message(cid, argv, image=image.name, mounts=(*image.mounts, share))


async def test_the_injected_harness_runs_the_task_in_the_image(
    docker_agent: Any, tmp_path: Path
) -> None:
    probe = gated_task(tmp_path, "d1", code=5)
    probe[-1] = "import harness; open('harness-path', 'w').write(harness.__file__)\n" + probe[-1]
    async with fake_master() as master, docker_agent(master.port) as agent:
        session = await master.session(1)
        await session.send(docker_start("dk1.1-0", probe, tmp_path))
        await session.state("dk1.1-0", RUNNING, timeout=60)
        seen = await task_saw(tmp_path, "d1")
        env = seen["env"]
        assert env["DET_RUN_DIR"] == RUN_DIR_IN_CONTAINER
        assert seen["cwd"] == f"{RUN_DIR_IN_CONTAINER}/workdir"
        assert env["DET_MASTER"] == f"http://127.0.0.1:{master.port}"
        assert env["DET_AGENT_ID"] == agent.daemon.settings.agent_id
        assert env["DET_SLOT_IDS"] == "[0]"
        assert env["PYTHONPATH"].split(":")[0] == f"{RUN_DIR_IN_CONTAINER}/pylib"
        run_dir = agent.daemon.settings.effective_work_dir / "runs" / "dk1.1-0"
        injected = (run_dir / "workdir" / "harness-path").read_text()
        assert injected == f"{RUN_DIR_IN_CONTAINER}/pylib/harness/__init__.py"
        release(tmp_path, "d1")
        done = await session.state("dk1.1-0", TERMINATED, timeout=60)
        assert done.exit_code == 5


async def test_a_running_container_survives_a_master_restart(
    docker_agent: Any, tmp_path: Path
) -> None:
    async with fake_master() as master, docker_agent(master.port) as agent:
        first = await master.session(1)
        await first.send(docker_start("dk2.1-0", gated_task(tmp_path, "d2"), tmp_path))
        await first.send(docker_start("dk3.1-0", gated_task(tmp_path, "d3"), tmp_path))
        await first.state("dk2.1-0", RUNNING, timeout=60)
        await first.state("dk3.1-0", RUNNING, timeout=60)
        master.to_reattach = (Container(id="dk2.1-0", state=RUNNING),)
        await master.restart()
        second = await master.session(2)
        (ack,) = second.started.containers_reattached
        assert (ack.container.id, ack.container.state, ack.failure) == ("dk2.1-0", RUNNING, None)
        agent_id = agent.daemon.settings.agent_id
        for _ in range(300):
            ids = {f.container_id for f in await agent.runtime.find(agent_id)}
            if ids == {"dk2.1-0"}:
                break
            await asyncio.sleep(0.05)
        assert ids == {"dk2.1-0"}  # the stray is killed and removed
        release(tmp_path, "d2")
        done = await second.state("dk2.1-0", TERMINATED, timeout=60)
        assert done.exit_code == 0
        assert second.states("dk3.1-0") == []


async def test_a_direct_command_runs_in_an_image_without_python(
    docker_agent: Callable[..., Any],
):
    """A command without a context directory runs as the container's own command: no launcher,
    so no Python is needed in the image (the test image without the host's Python mounted has
    none); its output, stdout and stderr apart and in order, reaches the master from the
    engine's log, ahead of its exit code."""
    from agent.task_output import NO_CONTEXT_ENV
    from tests.agent.test_daemon_output import direct_start

    image = ensure_test_image()
    script = "echo out 1; echo err 1 >&2; printf 'no newline'; exit 3"
    message = direct_start("dd1.1-0", ["sh", "-c", script])
    spec = message.spec.model_copy(update={"image": image.name})
    assert spec.environment[NO_CONTEXT_ENV] == "1"
    async with fake_master() as master, docker_agent(master.port):
        session = await master.session(1)
        await session.send(message.model_copy(update={"spec": spec}))
        done = await session.state("dd1.1-0", TERMINATED, timeout=60)
        assert done.exit_code == 3, session.logs("dd1.1-0")
        lines = session.output_lines("dd1.1-0")
        assert [t for s, t in lines if s == "stdout"] == ["out 1", "no newline"]
        assert [t for s, t in lines if s == "stderr"] == ["err 1"]


async def test_a_direct_command_that_does_not_exist_exits_127_saying_why(
    docker_agent: Callable[..., Any],
):
    from tests.agent.test_daemon_output import direct_start

    image = ensure_test_image()
    message = direct_start("dd2.1-0", ["no-such-command", "--flag"])
    spec = message.spec.model_copy(update={"image": image.name})
    async with fake_master() as master, docker_agent(master.port):
        session = await master.session(1)
        await session.send(message.model_copy(update={"spec": spec}))
        done = await session.state("dd2.1-0", TERMINATED, timeout=60)
        assert done.exit_code == 127
        said = " ".join(t for _, t in session.output_lines("dd2.1-0"))
        assert "no-such-command" in said, said
