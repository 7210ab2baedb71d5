"""The agent runs each process-runtime task in the Python its experiment names, else its pool's
(from the master's options), else its own task_python, else a task venv it makes itself; and a
Python that is not there fails the launch with the reason, never falling back to the agent's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.protocol import ContainerState, FailureType
from agent.task_venv import MARKER, ensure_task_venv
from tests.agent.conftest import py, start_message
from tests.support.fake_master import AgentSession, fake_master

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def prefix_task(tmp_path: Path, name: str) -> list[str]:
    out = tmp_path / f"{name}.json"
    return py(
        f"""
        import json, os, sys
        json.dump([sys.prefix, os.environ["PATH"]], open({str(out)!r}, "w"))
        """
    )


async def prefix_seen(session: AgentSession, tmp_path: Path, cid: str, name: str) -> str:
    done = await session.state(cid, ContainerState.TERMINATED)
    assert done.exit_code == 0, session.logs(cid)
    prefix, path = json.loads((tmp_path / f"{name}.json").read_text())
    assert path.split(":")[0] == f"{prefix}/bin"
    return prefix


async def test_without_any_setting_tasks_run_in_the_agents_own_task_venv(
    start_agent: Any, tmp_path: Path
) -> None:
    async with fake_master() as master, start_agent(master.port, task_python=None) as agent:
        session = await master.session(1)
        await session.send(start_message("d.1-0", prefix_task(tmp_path, "d")))
        prefix = await prefix_seen(session, tmp_path, "d.1-0", "d")
        venv = agent.daemon.settings.effective_work_dir / "task-venv"
        assert prefix == str(venv) != sys.prefix
        assert (venv / MARKER).is_file()


async def test_experiment_then_pool_then_agent(start_agent: Any, tmp_path: Path) -> None:
    made = {tier: ensure_task_venv(tmp_path / tier).path for tier in ("exp", "pool", "agent")}
    async with (
        fake_master(task_python=str(made["pool"])) as master,
        start_agent(master.port, task_python=str(made["agent"])),
    ):
        session = await master.session(1)
        await session.send(
            start_message("e.1-0", prefix_task(tmp_path, "e"), python=str(made["exp"]))
        )
        assert await prefix_seen(session, tmp_path, "e.1-0", "e") == str(made["exp"])
        await session.send(start_message("p.1-0", prefix_task(tmp_path, "p")))
        assert await prefix_seen(session, tmp_path, "p.1-0", "p") == str(made["pool"])
    async with fake_master() as master, start_agent(master.port, task_python=str(made["agent"])):
        session = await master.session(1)
        await session.send(start_message("a.1-0", prefix_task(tmp_path, "a"), slots=(1,)))
        assert await prefix_seen(session, tmp_path, "a.1-0", "a") == str(made["agent"])


async def test_a_python_that_is_not_there_fails_the_launch(
    start_agent: Any, tmp_path: Path
) -> None:
    missing = str(tmp_path / "gone" / "bin" / "python3")
    async with fake_master() as master, start_agent(master.port):
        session = await master.session(1)
        await session.send(start_message("m.1-0", py("print(1)"), python=missing))
        done = await session.state("m.1-0", ContainerState.TERMINATED)
        assert done.failure is not None and done.failure.type is FailureType.LAUNCH_ERROR
        assert f"the task's Python {missing!r}: " in done.failure.message
        assert "no such file or directory" in done.failure.message


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("/nowhere/bin/python3", "task_python /nowhere/bin/python3: /nowhere/bin/python3: no such"),
        ("venv/bin/python", "task_python: 'venv/bin/python' is a relative path"),
    ],
)
def test_an_agent_whose_task_python_names_nothing_stops_at_start_up(
    tmp_path: Path, value: str, said: str
) -> None:
    argv = [
        sys.executable, "-m", "agent", "--master-host", "127.0.0.1", "--master-port", "9",
        "--container-runtime", "process", "--artificial-slots", "1",
        "--work-dir", str(tmp_path / "w"), "--task-python", value,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
