"""Our `det task create|config|fork|pause|unpause|kill` (generic tasks) against a live master
with a fake agent, on Determined's fixtures (tests/fixtures/determined/generic_task)."""

from __future__ import annotations

import base64
import io
import re
import tarfile
from pathlib import Path
from typing import Any

from agent.protocol import StartContainer
from tests.cli.commands.conftest import StartMaster, add_agent, det_for, eventually, fails, ok
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "determined" / "generic_task"


async def _running(agent: FakeAgent, task_id: str, nth: int = 1) -> StartContainer:
    async def found() -> StartContainer | None:
        starts = [s for s in agent.started.values() if s.spec.task_id == task_id]
        if len(starts) >= nth and starts[nth - 1].container.id in agent.running:
            return starts[nth - 1]
        return None

    return await eventually(found, timeout=15)


async def _state(m: LiveMaster, task_id: str) -> str:
    task: dict[str, Any] = (await m.get(f"/api/v1/tasks/{task_id}"))["task"]
    return str(task["taskState"]).removeprefix("GENERIC_TASK_STATE_")


def _created(out: str) -> str:
    match = re.fullmatch(r"Created task (\S+)\n", out)
    assert match, out
    return match.group(1)


async def test_create_config_fork_pause_unpause_kill(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "g1", 1)
    det = det_for(m)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "data.txt").write_text("1 2 3\n")

    config = str(FIXTURES / "test_config.yaml")
    task_id = _created(
        ok(await det("task", "create", config, "-c", str(FIXTURES), "-i", str(extra)))
    )
    start = await _running(agent, task_id)
    assert start.spec.argv == ("echo", "task ran")
    context = await m.get(f"/api/v1/tasks/{task_id}/context_directory")
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(context["b64Tgz"]))) as archive:
        names = sorted(archive.getnames())
    assert names == ["extra", "extra/data.txt", *sorted(p.name for p in FIXTURES.iterdir())]
    await agent.exit(start.container.id, 0)
    assert "entrypoint:\n- echo\n- task ran\n" in ok(await det("task", "config", task_id))
    assert '"entrypoint": ["echo", "task ran"]' in ok(
        await det("task", "config", task_id, "--json")
    )

    forked = _created(ok(await det("task", "fork", task_id)))
    await agent.exit((await _running(agent, forked)).container.id, 0)
    overridden = _created(
        ok(
            await det(
                "task", "create", config, "--fork", task_id, "--config", "entrypoint=[echo,x]"
            )
        )
    )
    assert (await _running(agent, overridden)).spec.argv == ("echo", "x")
    await agent.exit((await _running(agent, overridden)).container.id, 0)

    pausing = _created(ok(await det("task", "create", str(FIXTURES / "test_config_pause.yaml"))))
    await _running(agent, pausing)
    assert ok(await det("task", "pause", pausing)) == f"Paused task: {pausing}\n"

    async def paused() -> bool:
        return await _state(m, pausing) == "PAUSED"

    await eventually(paused, timeout=15)
    assert ok(await det("task", "unpause", pausing)) == f"Unpaused task: {pausing}\n"
    await _running(agent, pausing, nth=2)
    assert ok(await det("task", "kill", pausing, "--root")) == f"Killed task: {pausing}\n"

    async def canceled() -> bool:
        return await _state(m, pausing) == "CANCELED"

    await eventually(canceled, timeout=15)

    unpausable = _created(ok(await det("task", "create", config, "--no_pause")))
    fails(await det("task", "pause", unpausable), "noPause")
    fails(await det("task", "config", "no-such-task"), "not found")
    fails(await det("task", "create", config, "--fork", "no-such-task"), "not found")
