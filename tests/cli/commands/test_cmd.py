"""`det cmd run|list|kill|logs` and `det task list` against a live master with a fake agent.

The fake agent plays the container: the test ships the command's output with the allocation's
token (as the harness launcher does) and reports the exit code.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import tarfile
from pathlib import Path
from typing import Any

from agent.protocol import StartContainer
from tests.cli.commands.conftest import (
    StartMaster,
    add_agent,
    det_for,
    eventually,
    experiment_yaml,
    fails,
    ok,
    running_on,
    submit,
    table_rows,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster


async def started(agent: FakeAgent, count: int = 1) -> list[StartContainer]:
    async def found() -> list[StartContainer]:
        starts = [s for s in agent.started.values() if s.spec.task_type == "COMMAND"]
        return starts if len(starts) >= count else []

    return await eventually(found, timeout=15)


async def ship(m: LiveMaster, start: StartContainer, *lines: str) -> None:
    token = start.spec.environment["DET_SESSION_TOKEN"]
    body = {
        "logs": [
            {"taskId": start.spec.task_id, "allocationId": start.spec.allocation_id, "log": line}
            for line in lines
        ]
    }
    r = await m.http.post(
        "/api/v1/task/logs",
        json=body,
        headers={"Grpc-Metadata-x-allocation-token": f"Bearer {token}"},
    )
    assert r.status_code == 200, r.text


async def command(m: LiveMaster, task_id: str) -> dict[str, Any]:
    return await m.get(f"/api/v1/commands/{task_id}")


async def test_run_streams_output_and_exits_with_the_commands_code(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    det = det_for(m)

    running = asyncio.create_task(det("cmd", "run", "echo", "hello"))
    (start,) = await started(agent)
    assert start.spec.slots == 1
    await ship(m, start, "hello\n", "world\n")
    await agent.exit(start.container.id, 0)
    out = ok(await running)
    assert out == "hello\nworld\n"
    reply = await command(m, start.spec.task_id)
    assert reply["config"]["entrypoint"] == ["echo", "hello"]

    # Options after the program belong to it; the command's own exit code comes back.
    failing = asyncio.create_task(det("cmd", "run", "sh", "-c", "echo oops; exit 3"))
    _, second = await started(agent, 2)
    await ship(m, second, "oops\n")
    await agent.exit(second.container.id, 3)
    result = await failing
    text = fails(result, f"command {second.spec.task_id}: command exited with code 3", code=3)
    assert result.stdout == "oops\n", text
    reply = await command(m, second.spec.task_id)
    assert reply["config"]["entrypoint"] == ["sh", "-c", "echo oops; exit 3"]


async def test_detach_with_context_and_config(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    det = det_for(m)
    ctx = tmp_path / "ctx"
    (ctx / "sub").mkdir(parents=True)
    (ctx / "train.py").write_text("print(1)\n")
    (ctx / "sub" / "data.txt").write_text("42\n")
    (tmp_path / "cmd.yaml").write_text("description: from a file\nresources:\n  slots: 1\n")

    out = ok(
        await det(
            "cmd", "run", "-d", "--context", str(ctx), "--config-file", str(tmp_path / "cmd.yaml"),
            "--config", "environment.environment_variables=[A=1]", "python3", "train.py",
        )
    )  # fmt: skip
    task_id = out.strip()
    (start,) = await started(agent)
    assert start.spec.task_id == task_id
    reply = await command(m, task_id)
    assert reply["command"]["description"] == "from a file"
    assert reply["config"]["entrypoint"] == ["python3", "train.py"]
    assert reply["config"]["environment"]["environment_variables"]["cpu"] == ["A=1"]
    token = start.spec.environment["DET_SESSION_TOKEN"]
    r = await m.http.get(
        f"/api/v1/tasks/{task_id}/context_directory",
        headers={"Grpc-Metadata-x-allocation-token": f"Bearer {token}"},
    )
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(r.json()["b64Tgz"]))) as archive:
        assert sorted(archive.getnames()) == ["sub", "sub/data.txt", "train.py"]
    await agent.exit(start.container.id, 0)


async def test_list_kill_logs_and_task_list(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 2)
    det = det_for(m)
    await submit(m, experiment_yaml("exp"))
    await running_on(agent)
    first = ok(await det("cmd", "run", "-d", "sleep", "100")).strip()
    second = ok(await det("cmd", "run", "-d", "--config", "resources.slots=1", "true")).strip()
    starts = {s.spec.task_id: s for s in await started(agent, 1)}
    running = starts[first]
    await ship(m, running, "tick\n")

    rows = table_rows(ok(await det("cmd", "list")))
    assert [r[0] for r in rows] == [first, second]
    assert [r[3] for r in rows] == ["RUNNING", "QUEUED"]
    assert all(r[1] == "admin" and r[5] == "default" for r in rows)
    listed = json.loads(ok(await det("cmd", "ls", "--json")))["commands"]
    assert [c["id"] for c in listed] == [first, second]

    out = ok(await det("task", "list"))
    rows = {r[1]: r for r in table_rows(out)}
    trial_row = next(r for r in rows.values() if r[2] == "TRIAL")
    assert trial_row[3].startswith("Trial ") and trial_row[5] == "RUNNING"
    cmd_row = rows[running.spec.allocation_id]
    assert cmd_row[0] == first and cmd_row[2:4] == ["COMMAND", listed[0]["description"]]
    assert cmd_row[4:8] == ["1", "RUNNING", "default", "a1"]
    tasks = json.loads(ok(await det("task", "ls", "--json")))["allocationIdToSummary"]
    assert running.spec.allocation_id in tasks

    assert ok(await det("cmd", "logs", first)) == "tick\n"
    assert ok(await det("task", "logs", first, "--tail", "1")) == "tick\n"

    assert ok(await det("cmd", "kill", second)) == f"Killed command {second}\n"
    assert (await command(m, second))["command"]["state"] == "STATE_TERMINATED"
    assert ok(await det("cmd", "kill", first)) == f"Killed command {first}\n"

    async def killed() -> bool:
        return (await command(m, first))["command"]["state"] == "STATE_TERMINATED"

    await eventually(killed, timeout=15)
    # A killed command's logs end; following them returns.
    assert ok(await det("cmd", "logs", "-f", first)) == "tick\n"
    rows = table_rows(ok(await det("cmd", "list")))
    assert [r[3] for r in rows] == ["TERMINATED", "TERMINATED"]
    assert rows[0][4] == "killed by user request"

    fails(await det("cmd", "kill", "nope"), "command nope not found")
    fails(await det("cmd", "run"), "nothing to run")
