"""Tasks that run their command directly (no context directory): the agent runs the command
itself, without the harness launcher, and ships its output to the master; against a
test-controlled master socket, with the process runtime."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent.protocol import ContainerOutput, ContainerState
from agent.runtimes.process import RECORD_FILE
from agent.task_env import LAUNCHER_MODULE
from agent.task_output import NO_CONTEXT_ENV
from tests.agent.conftest import py, start_message
from tests.agent.test_daemon import listed, release, running
from tests.support.fake_master import fake_master

pytestmark = pytest.mark.slow

TERMINATED = ContainerState.TERMINATED
DIRECT = {NO_CONTEXT_ENV: "1"}


def direct_start(cid: str, argv: list[str]) -> Any:
    message = start_message(cid, argv)
    spec = message.spec.model_copy(update={"environment": {**message.spec.environment, **DIRECT}})
    return message.model_copy(update={"spec": spec})


def argv_run(agent: Any, cid: str) -> list[str]:
    """The argv the process runtime started for a container (its record)."""
    folder = agent.runtime._existing(cid)
    return json.loads((folder / RECORD_FILE).read_text())["argv"]


class TestDirectTasks:
    async def test_output_reaches_the_master_before_the_exit(self, start_agent: Any):
        argv = py(
            """
            import sys
            print("one", flush=True)
            print("[rank=3] ERROR: two", file=sys.stderr, flush=True)
            sys.stdout.write("three, unfinished")
            sys.exit(3)
            """
        )
        async with fake_master() as master, start_agent(master.port):
            session = await master.session(1)
            await session.send(direct_start("o1.1-0", argv))
            done = await session.state("o1.1-0", TERMINATED)
            assert done.exit_code == 3
            lines = session.output_lines("o1.1-0")
            assert sorted(lines) == sorted(
                [
                    ("stdout", "one"),
                    ("stderr", "[rank=3] ERROR: two"),
                    ("stdout", "three, unfinished"),
                ]
            )  # the master reads the prefixes (controlplane/domain/task_output.py)
            exit_at = session.messages.index(done)
            last_output = max(session.messages.index(m) for m in session.output("o1.1-0"))
            assert last_output < exit_at

    async def test_the_command_runs_without_the_launcher(self, start_agent: Any, tmp_path: Path):
        gate = tmp_path / "gate"
        argv = py(f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.02)")
        async with fake_master() as master, start_agent(master.port) as agent:
            session = await master.session(1)
            await session.send(direct_start("o2.1-0", argv))
            await session.send(start_message("o3.1-0", argv))  # has a context: the launcher
            await running(session, "o2.1-0")
            await running(session, "o3.1-0")
            assert argv_run(agent, "o2.1-0") == argv
            launched = argv_run(agent, "o3.1-0")
            assert any(LAUNCHER_MODULE in word for word in launched) and launched[-3:] == argv
            gate.touch()
            await session.state("o2.1-0", TERMINATED)
            await session.state("o3.1-0", TERMINATED)

    async def test_unconfirmed_output_goes_again_after_a_reconnect(
        self, start_agent: Any, tmp_path: Path
    ):
        """A master that died before storing a batch (it never said OutputStored) gets it again
        from the agent once it is back; the exit waits for the master to store the last lines."""
        argv = py(
            f"""
            import os, time
            print("before", flush=True)
            while not os.path.exists({str(tmp_path / "g.go")!r}):
                time.sleep(0.02)
            print("after", flush=True)
            """
        )
        async with fake_master(store_output=False) as master, start_agent(master.port):
            first = await master.session(1)
            await first.send(direct_start("o4.1-0", argv))
            await first.wait_for(lambda m: isinstance(m, ContainerOutput))
            assert first.output_lines("o4.1-0") == [("stdout", "before")]
            master.to_reattach = (listed("o4.1-0"),)
            await master.restart()
            master.store_output = True
            second = await master.session(2)
            again = await second.wait_for(lambda m: isinstance(m, ContainerOutput))
            assert isinstance(again, ContainerOutput)
            assert again.seq == first.output("o4.1-0")[0].seq
            release(tmp_path, "g")
            done = await second.state("o4.1-0", TERMINATED)
            assert done.exit_code == 0
            assert second.output_lines("o4.1-0") == [("stdout", "before"), ("stdout", "after")]

    async def test_an_unconfirmed_last_batch_holds_the_exit_back(
        self, start_agent: Any, monkeypatch: pytest.MonkeyPatch
    ):
        from agent import containers

        monkeypatch.setattr(containers, "OUTPUT_DRAIN_S", 1.0)
        async with fake_master(store_output=False) as master, start_agent(master.port):
            session = await master.session(1)
            await session.send(direct_start("o5.1-0", py("print('last words')")))
            await session.wait_for(lambda m: isinstance(m, ContainerOutput))
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            done = await session.state("o5.1-0", TERMINATED, timeout=10)
            # The task exited at once; its exit waited for a confirmation that never came.
            assert loop.time() - t0 >= 0.8
            assert done.exit_code == 0
