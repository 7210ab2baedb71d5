"""Level 4 (commands part): the real `det` 0.38.1 `cmd run|list|kill|logs` and `task list`
against our master subprocess (wire §6 L4).

A fake agent (tests.support.fake_agent) plays the container side: it reports the container
RUNNING, the test ships the output through the allocation's token (as the harness launcher
does), then the agent reports the exit. The real client runs in a worker thread meanwhile.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.protocol import StartContainer
from tests.compat.conftest import RunningMaster, run
from tests.compat.test_determined_cli import Det
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually

pytestmark = [pytest.mark.compat, pytest.mark.slow]

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture(scope="module")
def det(det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory):
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


@pytest.fixture
async def agent(running_master: RunningMaster) -> AsyncIterator[FakeAgent]:
    made = FakeAgent(running_master.url.replace("http://", "ws://", 1), "cmd-agent", 1)
    await made.connect()
    assert made.shutdown is None, made.shutdown
    yield made
    await made.close()


async def started(agent: FakeAgent, task_id: str | None = None) -> StartContainer:
    async def found() -> StartContainer | None:
        for start in agent.started.values():
            if start.container.id in agent.running and task_id in (None, start.spec.task_id):
                return start
        return None

    return await eventually(found, timeout=20)


async def api(master: RunningMaster, admin: dict[str, str], method: str, path: str, **kw: Any):
    async with httpx.AsyncClient(base_url=master.url, timeout=30) as http:
        reply = await http.request(method, path, **{"headers": admin, **kw})
    assert reply.status_code == 200, reply.text
    return reply.json()


async def ship(master: RunningMaster, start: StartContainer, *lines: str) -> None:
    token = start.spec.environment["DET_SESSION_TOKEN"]
    logs = [
        {"taskId": start.spec.task_id, "allocationId": start.spec.allocation_id, "log": line}
        for line in lines
    ]
    headers = {"Grpc-Metadata-x-allocation-token": f"Bearer {token}"}
    await api(master, headers, "POST", "/api/v1/task/logs", json={"logs": logs})


def _rows(out: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("|")] for line in out.splitlines() if " | " in line]


async def test_cmd_run_echo_hello(
    det: Det, running_master: RunningMaster, admin: dict[str, str], agent: FakeAgent
) -> None:
    running = asyncio.create_task(run(det, "cmd", "run", "echo", "hello"))
    start = await started(agent)
    await ship(running_master, start, "hello\n")
    await agent.exit(start.container.id, 0)
    _, out = await running
    task_id = start.spec.task_id
    assert re.search(rf"Launched command \(id: {task_id}, name: Command \(\w+-\w+\)\)\.", out)
    assert "\nhello\n" in out and f"det task logs -f {task_id}" in out
    reply = await api(running_master, admin, "GET", f"/api/v1/commands/{task_id}")
    assert reply["command"]["state"] == "STATE_TERMINATED"
    assert reply["config"]["entrypoint"] == ["echo", "hello"]


async def test_cmd_run_shows_what_the_agent_shipped_for_a_direct_command(
    det: Det, running_master: RunningMaster, agent: FakeAgent
) -> None:
    """A command without a context directory runs directly: the agent, not the launcher, ships
    its output (ContainerOutput). The real client follows it like any task's logs, the level
    prefix read off as Determined's shipper does."""
    running = asyncio.create_task(run(det, "cmd", "run", "sh", "-c", "echo hello; echo oops >&2"))
    start = await started(agent)
    assert start.spec.environment.get("RESOLUTE_NO_CONTEXT") == "1"
    await agent.output(start.container.id, 1, [("stdout", "hello"), ("stderr", "ERROR: oops")])

    async def confirmed() -> bool:
        return [s.seq for s in agent.stored] == [1]

    await eventually(confirmed, timeout=10)
    await agent.exit(start.container.id, 0)
    _, out = await running
    assert "\nhello\n" in out and "oops\n" in out and "ERROR: oops" not in out


async def test_cmd_run_one_shell_argument_runs_with_sh_c(
    det: Det, running_master: RunningMaster, admin: dict[str, str], agent: FakeAgent
) -> None:
    """The real client sends `det cmd run 'a; b'` as a one-element list; the container must run
    it with `sh -c` (Determined's command-entrypoint.sh), not exec it as a program name."""
    loop = "for x in a b; do echo $x; done"
    running = asyncio.create_task(run(det, "cmd", "run", loop))
    start = await started(agent)
    assert start.spec.argv == ("/bin/sh", "-c", loop)
    await ship(running_master, start, "a\n", "b\n")
    await agent.exit(start.container.id, 0)
    _, out = await running
    assert "\na\nb\n" in out
    reply = await api(running_master, admin, "GET", f"/api/v1/commands/{start.spec.task_id}")
    assert reply["config"]["entrypoint"] == [loop]


async def test_detached_with_context_then_list_logs_tasks_and_kill(
    det: Det,
    running_master: RunningMaster,
    admin: dict[str, str],
    agent: FakeAgent,
    tmp_path: Path,
) -> None:
    ctx = tmp_path / "ctx"
    (ctx / "sub").mkdir(parents=True)
    (ctx / "train.py").write_text('print("hi")\n')
    (ctx / "sub" / "d.txt").write_text("data\n")
    _, out = await run(det, "cmd", "run", "--detach", "--context", str(ctx), "python3", "train.py")
    task_id = out.strip().splitlines()[-1]
    assert re.fullmatch(UUID, task_id), out
    start = await started(agent, task_id)
    headers = {
        "Grpc-Metadata-x-allocation-token": f"Bearer {start.spec.environment['DET_SESSION_TOKEN']}"
    }
    reply = await api(running_master, headers, "GET", f"/api/v1/tasks/{task_id}/context_directory")
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(reply["b64Tgz"]))) as archive:
        assert sorted(archive.getnames()) == ["sub", "sub/d.txt", "train.py"]
    await ship(running_master, start, "hi\n")

    _, out = await run(det, "cmd", "list")
    header, *rows = _rows(out)
    assert header == [
        "id", "username", "description", "state", "exitStatus", "resourcePool", "workspaceName"
    ]  # fmt: skip
    row = next(r for r in rows if r[0] == task_id)
    assert row[1] == "admin" and row[3] == "RUNNING" and row[5:7] == ["default", "Uncategorized"]
    _, out = await run(det, "cmd", "list", "--json")
    assert task_id in [c["id"] for c in json.loads(out)]

    _, out = await run(det, "task", "list")
    header, *rows = _rows(out)
    assert header == [
        "Task ID", "Allocation ID", "Name", "Slots Needed", "Registered Time", "Agent",
        "Priority", "Resource Pool", "Ports",
    ]  # fmt: skip
    row = next(r for r in rows if r[0] == task_id)
    assert row[1] == start.spec.allocation_id and row[2].startswith("Command (")
    assert row[3] == "1" and row[5:8] == ["cmd-agent", "42", "default"]
    _, out = await run(det, "task", "list", "--json")
    assert json.loads(out)[start.spec.allocation_id]["taskId"] == task_id

    _, out = await run(det, "cmd", "logs", task_id)
    assert out.startswith("hi\n")
    _, out = await run(det, "cmd", "describe", task_id)
    header, row = _rows(out)
    assert row[0] == task_id and row[3] == "RUNNING" and row[6] == "Uncategorized"
    _, out = await run(det, "cmd", "config", task_id)
    assert "entrypoint:\n- python3\n- train.py" in out and "slots: 1" in out
    # A prefix of the id is expanded through GET /api/v1/commands.
    _, out = await run(det, "cmd", "describe", task_id[:8])
    assert task_id in out

    _, out = await run(det, "cmd", "kill", task_id)
    assert f"Killed command {task_id}" in out

    async def ended() -> bool:
        reply = await api(running_master, admin, "GET", f"/api/v1/commands/{task_id}")
        return reply["command"]["state"] == "STATE_TERMINATED"

    await eventually(ended, timeout=20)
    _, out = await run(det, "cmd", "list")
    row = next(r for r in _rows(out) if r[0] == task_id)
    assert row[3:5] == ["TERMINATED", "killed by user request"]
