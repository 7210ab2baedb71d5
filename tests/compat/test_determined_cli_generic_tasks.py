"""Issue 39 item 3: the real `det` 0.38.1 `task create|config|fork|pause|unpause|kill` with
Determined's own fixtures (tests/fixtures/determined/generic_task, unchanged) against our master
subprocess. A fake agent (one slot) plays the container side, as in the commands' module."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from agent.protocol import StartContainer
from tests.compat.conftest import PASSWORD, RunningMaster, run
from tests.compat.test_determined_cli import Det
from tests.compat.test_determined_cli_commands import api, ship
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually

pytestmark = [pytest.mark.compat, pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "determined" / "generic_task"
CREATED = re.compile(r"Created task (\S+)")


def _yaml(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


@pytest.fixture(scope="module")
def det(det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory):
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


@pytest.fixture
async def agent(running_master: RunningMaster) -> AsyncIterator[FakeAgent]:
    made = FakeAgent(running_master.url.replace("http://", "ws://", 1), "generic-agent", 1)
    await made.connect()
    assert made.shutdown is None, made.shutdown
    yield made
    await made.close()


def _starts(agent: FakeAgent, task_id: str) -> list[StartContainer]:
    return [s for s in agent.started.values() if s.spec.task_id == task_id]


async def _running(agent: FakeAgent, task_id: str, nth: int = 1) -> StartContainer:
    async def found() -> StartContainer | None:
        starts = _starts(agent, task_id)
        if len(starts) >= nth and starts[nth - 1].container.id in agent.running:
            return starts[nth - 1]
        return None

    return await eventually(found, timeout=20)


async def _create(det: Det, *args: str) -> str:
    _, out = await run(det, "task", "create", *args)
    match = CREATED.search(out)
    assert match, out
    return match.group(1)


async def _task(master: RunningMaster, admin: dict[str, str], task_id: str) -> dict[str, Any]:
    return (await api(master, admin, "GET", f"/api/v1/tasks/{task_id}"))["task"]


async def _state_is(master: RunningMaster, admin: dict[str, str], task_id: str, state: str) -> None:
    async def reached() -> bool:
        return (await _task(master, admin, task_id))["taskState"] == f"GENERIC_TASK_STATE_{state}"

    await eventually(reached, timeout=20)


async def test_create_runs_logs_and_completes(
    det: Det, running_master: RunningMaster, admin: dict[str, str], agent: FakeAgent
) -> None:
    config = str(FIXTURES / "test_config.yaml")
    task_id = await _create(det, config, "--context", str(FIXTURES))
    start = await _running(agent, task_id)
    assert start.spec.argv == ("echo", "task ran")
    _, out = await run(det, "task", "list")
    row = next(line for line in out.splitlines() if line.strip().startswith(task_id))
    assert "Generic Task (" in row and "generic-agent" in row
    await ship(running_master, start, "task ran\n")
    await agent.exit(start.container.id, 0)
    await _state_is(running_master, admin, task_id, "COMPLETED")
    _, out = await run(det, "task", "logs", task_id)
    assert "task ran" in out
    _, out = await run(det, "task", "config", task_id)
    assert _yaml(out) == {"entrypoint": ["echo", "task ran"]}  # as Determined's e2e
    task = await _task(running_master, admin, task_id)
    assert task["taskType"] == "TASK_TYPE_GENERIC" and task["endTime"]


async def test_fork_with_a_config_and_without(
    det: Det, running_master: RunningMaster, admin: dict[str, str], agent: FakeAgent
) -> None:
    source = await _create(det, str(FIXTURES / "test_config.yaml"), "--context", str(FIXTURES))
    await agent.exit((await _running(agent, source)).container.id, 0)
    forked = await _create(det, str(FIXTURES / "test_config_fork.yaml"), "--fork", source)
    start = await _running(agent, forked)
    assert start.spec.argv == ("echo", "forked")
    await agent.exit(start.container.id, 0)
    _, out = await run(det, "task", "config", forked)
    assert _yaml(out) == {"entrypoint": ["echo", "forked"]}
    _, out = await run(det, "task", "fork", source)
    bare = CREATED.search(out)
    assert bare, out
    start = await _running(agent, bare.group(1))
    assert start.spec.argv == ("echo", "task ran")
    assert "RESOLUTE_NO_CONTEXT" not in start.spec.environment  # the source's context came too
    await agent.exit(start.container.id, 0)
    task = await _task(running_master, admin, bare.group(1))
    assert task["forkedFrom"] == source


BINDINGS = r"""
import sys
from determined.common.api import authentication, bindings
sess = authentication.login(sys.argv[1], "admin", sys.argv[2])
task = bindings.get_GetTask(sess, taskId=sys.argv[3]).task
config = bindings.get_GetGenericTaskConfig(sess, taskId=sys.argv[3]).config
print(task.taskType.value, task.taskState.value, config, len(task.allocations))
"""


async def _bindings(det: Det, master: RunningMaster, task_id: str) -> list[str]:
    """What the real client's generated bindings parse of GetTask and GetGenericTaskConfig."""
    python = str(det.bin / "python")
    args = [python, "-c", BINDINGS, master.url, PASSWORD, task_id]
    proc = await asyncio.to_thread(
        subprocess.run, args, capture_output=True, text=True, timeout=60, env=det.env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split()


async def test_pause_then_unpause_at_once_as_determineds_e2e_test(
    det: Det, running_master: RunningMaster, admin: dict[str, str], agent: FakeAgent
) -> None:
    """Determined's test_pause_and_unpause_generic_task: the state reads PAUSED right after
    `det task pause` and ACTIVE right after `det task unpause`; the task then completes."""
    task_id = await _create(det, str(FIXTURES / "test_config_pause.yaml"))
    await _running(agent, task_id)
    await run(det, "task", "pause", task_id)
    assert (await _task(running_master, admin, task_id))["taskState"].endswith("_PAUSED")
    await run(det, "task", "unpause", task_id)
    assert (await _task(running_master, admin, task_id))["taskState"].endswith("_ACTIVE")
    # The paused container is still killed; its end queues the task for a new one.
    second = await _running(agent, task_id, nth=2)
    await agent.exit(second.container.id, 0)
    await _state_is(running_master, admin, task_id, "COMPLETED")
    parsed = await _bindings(det, running_master, task_id)
    assert parsed[:2] == ["TASK_TYPE_GENERIC", "GENERIC_TASK_STATE_COMPLETED"]
    assert json.loads(" ".join(parsed[2:-1])) == {"entrypoint": ["sleep", "5"]}
    assert parsed[-1] == "2"


async def test_pause_unpause_and_kill_a_running_task(
    det: Det, running_master: RunningMaster, admin: dict[str, str], agent: FakeAgent
) -> None:
    paused = await _create(det, str(FIXTURES / "test_config_pause.yaml"))
    first = await _running(agent, paused)
    _, out = await run(det, "task", "pause", paused)
    assert f"Paused task: {paused}" in out
    await _state_is(running_master, admin, paused, "PAUSED")

    # The master kills its container (the fake agent exits it with 137) and keeps it open.
    async def stopped() -> bool:
        return first.container.id not in agent.running

    await eventually(stopped, timeout=20)
    assert (await _task(running_master, admin, paused))["endTime"] is None
    # The one slot is free and the paused task (older) does not take it: a new one does.
    other = await _create(det, str(FIXTURES / "test_config.yaml"))
    await agent.exit((await _running(agent, other)).container.id, 0)
    assert len(_starts(agent, paused)) == 1
    await _state_is(running_master, admin, other, "COMPLETED")

    _, out = await run(det, "task", "unpause", paused)
    assert f"Unpaused task: {paused}" in out
    await _running(agent, paused, nth=2)
    await _state_is(running_master, admin, paused, "ACTIVE")
    _, out = await run(det, "task", "kill", paused)
    assert f"killed task: {paused}" in out
    await _state_is(running_master, admin, paused, "CANCELED")
    assert len(_starts(agent, paused)) == 2


async def test_errors_reach_the_real_client(det: Det, running_master: RunningMaster) -> None:
    code, out = await run(det, "task", "pause", "no-such-task", ok=False)
    assert code != 0 and "not found" in out
    code, out = await asyncio.to_thread(det, "task", "config", "no-such-task", ok=False)
    assert code != 0


async def test_a_failing_task_ends_in_error(
    det: Det, running_master: RunningMaster, admin: dict[str, str], agent: FakeAgent
) -> None:
    task_id = await _create(det, str(FIXTURES / "test_config_error.yaml"))
    start = await _running(agent, task_id)
    assert start.spec.argv == ("exit", "1")
    await agent.exit(start.container.id, 1)
    await _state_is(running_master, admin, task_id, "ERROR")


async def test_an_unpause_while_the_paused_container_still_runs_waits_for_its_end(
    det: Det, running_master: RunningMaster, admin: dict[str, str]
) -> None:
    """The container ignores the kill for a while: the task reads PAUSED, then ACTIVE after the
    unpause, gets no second container while the first lives, and is queued when it ends."""
    slow = FakeAgent(running_master.url.replace("http://", "ws://", 1), "slow-agent", 1,
                     ignore_kill=True)  # fmt: skip
    await slow.connect()
    try:
        task_id = await _create(det, str(FIXTURES / "test_config_pause.yaml"))
        first = await _running(slow, task_id)
        await run(det, "task", "pause", task_id)

        async def killed() -> bool:
            return any(s.container_id == first.container.id for s in slow.signals)

        await eventually(killed, timeout=20)
        assert (await _task(running_master, admin, task_id))["taskState"].endswith("_PAUSED")
        await run(det, "task", "unpause", task_id)
        assert (await _task(running_master, admin, task_id))["taskState"].endswith("_ACTIVE")
        assert len(_starts(slow, task_id)) == 1 and first.container.id in slow.running
        await slow.exit(first.container.id, 137)
        second = await _running(slow, task_id, nth=2)
        await slow.exit(second.container.id, 0)
        await _state_is(running_master, admin, task_id, "COMPLETED")
    finally:
        await slow.close()
