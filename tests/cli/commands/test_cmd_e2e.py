"""`det cmd run` end to end: a live master, a real agent process (process runtime) and our
`det`; the harness launcher inside the task downloads the context and ships the output.

Costly (an agent process, one Python task per command), so it checks everything a user sees
in one cluster: output, context directory, environment, exit codes, kill.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.cli.commands.conftest import StartMaster, det_for, eventually, fails, ok
from tests.support.live_master import LiveMaster

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


@pytest.fixture
async def agent_process(tmp_path: Path) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    made: list[asyncio.subprocess.Process] = []
    yield made
    for proc in made:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def start_agent(
    m: LiveMaster, made: list[asyncio.subprocess.Process], work_dir: Path
) -> asyncio.subprocess.Process:
    port = m.url.rsplit(":", 1)[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    log = (work_dir.parent / "agent.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent", "--master-host", "127.0.0.1", "--master-port", port,
        "--agent-id", "e2e", "--work-dir", str(work_dir), "--container-runtime", "process",
        "--artificial-slots", "2", cwd=REPO, env=env, stdout=log, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    log.close()
    made.append(proc)

    async def registered() -> bool:
        agents = (await m.get("/api/v1/agents"))["agents"]
        return any(a["id"] == "e2e" for a in agents)

    await eventually(registered, timeout=30)
    return proc


async def test_commands_on_a_real_agent(
    start_master: StartMaster, agent_process: list[asyncio.subprocess.Process], tmp_path: Path
) -> None:
    m = await start_master()
    await start_agent(m, agent_process, tmp_path / "agent")
    det = det_for(m)

    assert ok(await det("cmd", "run", "echo", "hello")) == "hello\n"
    # one argument runs with `sh -c`, as in Determined
    assert ok(await det("cmd", "run", "for x in a b; do echo $x; done")) == "a\nb\n"

    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "data.txt").write_text("from the context\n")
    out = ok(
        await det(
            "cmd", "run", "--context", str(ctx),
            "--config", "environment.environment_variables=[GREETING=hi]",
            "sh", "-c", 'cat data.txt; echo "$GREETING $DET_TASK_TYPE"',
        )
    )  # fmt: skip
    assert out == "from the context\nhi COMMAND\n"

    result = await det("cmd", "run", "sh", "-c", "echo bad >&2; exit 3")
    fails(result, "command exited with code 3", code=3)
    assert result.stdout == "bad\n"

    task_id = ok(await det("cmd", "run", "-d", "sleep", "300")).strip()

    async def running() -> bool:
        reply = await m.get(f"/api/v1/commands/{task_id}")
        return reply["command"]["state"] == "STATE_RUNNING"

    await eventually(running, timeout=30)
    ok(await det("cmd", "kill", task_id))

    async def ended() -> dict[str, object] | None:
        reply = await m.get(f"/api/v1/commands/{task_id}")
        return reply["command"] if reply["command"]["state"] == "STATE_TERMINATED" else None

    command = await eventually(ended, timeout=30)
    assert command["exitStatus"] == "killed by user request"
    assert (await m.get("/api/v1/tasks"))["allocationIdToSummary"] == {}
