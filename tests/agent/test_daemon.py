"""The daemon against a test-controlled master socket, running real tasks with the process runtime.

Why a fake master: these tests need to decide exactly what the master lists for reattachment,
when it disappears and what it sends; the real master's side is tested in tests/controlplane.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from agent import containers
from agent.daemon import ExitCode
from agent.protocol import (
    AgentShutdown,
    Container,
    ContainerLog,
    ContainerState,
    FailureType,
    SignalContainer,
)
from agent.run_dir import run_dir_of
from tests.agent.conftest import py, start_message
from tests.support.fake_master import AgentSession, fake_master

pytestmark = pytest.mark.slow

RUNNING = ContainerState.RUNNING
TERMINATED = ContainerState.TERMINATED


def gated_task(tmp_path: Path, name: str, code: int = 0) -> list[str]:
    """A task that records its environment, then waits for `<name>.go` and exits `code`."""
    gate, env_file = tmp_path / f"{name}.go", tmp_path / f"{name}.env.json"
    return py(
        f"""
        import json, os, sys, time
        with open({str(env_file)!r}, "w") as f:
            json.dump({{"env": dict(os.environ), "cwd": os.getcwd()}}, f)
        while not os.path.exists({str(gate)!r}):
            time.sleep(0.02)
        sys.exit({code})
        """
    )


async def task_saw(tmp_path: Path, name: str) -> dict[str, Any]:
    """What the gated task recorded once it has started (RUNNING may come first)."""
    path = tmp_path / f"{name}.env.json"
    for _ in range(400):
        if path.exists():
            try:
                return json.loads(path.read_text())
            except ValueError:  # caught half-written
                pass
        await asyncio.sleep(0.025)
    raise AssertionError(f"the task never wrote {path}")


def release(tmp_path: Path, name: str) -> None:
    (tmp_path / f"{name}.go").touch()


def listed(cid: str, state: ContainerState = RUNNING) -> Container:
    return Container(id=cid, state=state)


async def running(session: AgentSession, cid: str) -> None:
    await session.state(cid, RUNNING)


class TestContainerLife:
    async def test_start_run_exit_zero_then_removed(
        self, start_agent: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ):
        monkeypatch.setattr(containers, "STARTING_REPORT_S", 60.0)  # a quick start: no STARTING
        async with fake_master() as master, start_agent(master.port) as agent:
            session = await master.session(1)
            assert session.query["reconnect"] == "false"
            assert session.query["id"] == "agent-under-test"
            assert [d.id for d in session.started.devices] == [0, 1]
            await session.send(start_message("t1.1-0", gated_task(tmp_path, "a"), slots=(1,)))
            await running(session, "t1.1-0")
            release(tmp_path, "a")
            done = await session.state("t1.1-0", TERMINATED)
            assert done.exit_code == 0 and done.failure is None
            assert done.allocation_id == "t1.1"
            assert session.states("t1.1-0") == [RUNNING, TERMINATED]
            run_dir = run_dir_of(agent.daemon.settings.effective_work_dir, "t1.1-0")

            async def removed() -> bool:
                return not run_dir.exists() and not await agent.runtime.find("agent-under-test")

            for _ in range(200):
                if await removed():
                    break
                await asyncio.sleep(0.05)
            assert await removed()

    async def test_task_environment_and_run_dir(self, start_agent: Any, tmp_path: Path):
        async with fake_master() as master, start_agent(master.port, http_proxy="http://px:3128"):
            session = await master.session(1)
            message = start_message(
                "t2.1-0",
                gated_task(tmp_path, "b"),
                slots=(0, 1),
                files={"info/cluster.json": '{"x": 1}'},
            )
            await session.send(message)
            await running(session, "t2.1-0")
            seen = await task_saw(tmp_path, "b")
            env, run_dir = seen["env"], Path(seen["env"]["DET_RUN_DIR"])
            assert env["DET_MASTER"] == f"http://127.0.0.1:{master.port}"
            assert env["DET_MASTER_HOST"] == env["DET_MASTER_ADDR"] == "127.0.0.1"
            assert env["DET_MASTER_PORT"] == str(master.port)
            assert env["DET_AGENT_ID"] == "agent-under-test"
            assert env["DET_SLOT_IDS"] == "[0,1]"
            assert env["DET_CONTAINER_ID"] == "t2.1-0"
            assert env["DET_CLUSTER_ID"] == "c-1" and env["DET_MASTER_ID"] == "fake-master"
            assert env["USER_VAR"] == "from-user"
            assert env["http_proxy"] == env["HTTP_PROXY"] == "http://px:3128"
            assert seen["cwd"] == str(run_dir / "workdir")
            # The master's cluster.json, completed with the agent's own facts.
            assert json.loads((run_dir / "info" / "cluster.json").read_text()) == {
                "x": 1,
                "master_url": f"http://127.0.0.1:{master.port}",
                "cluster_id": "c-1",
                "agent_id": "agent-under-test",
                "slot_ids": [0, 1],
            }
            assert (run_dir / "launched-by-standin").exists()
            pylib = Path(env["PYTHONPATH"].split(":")[0])
            assert pylib.parent.name == "pylib" and not str(pylib).startswith(str(run_dir))
            assert (pylib / "harness" / "exec" / "launch.py").exists()
            release(tmp_path, "b")
            await session.state("t2.1-0", TERMINATED)

    async def test_non_zero_exit_is_a_container_failure(self, start_agent: Any, tmp_path: Path):
        async with fake_master() as master, start_agent(master.port):
            session = await master.session(1)
            await session.send(start_message("t3.1-0", py("import sys; sys.exit(3)")))
            done = await session.state("t3.1-0", TERMINATED)
            assert done.exit_code == 3
            assert done.failure is not None
            assert done.failure.type is FailureType.CONTAINER_FAILED
            assert done.failure.exit_code == 3

    async def test_launch_failure_is_reported_with_a_log_line(self, start_agent: Any):
        async with fake_master() as master, start_agent(master.port):
            session = await master.session(1)
            bad = start_message("t4.1-0", py("pass"), files={"../escape.txt": "x"})
            await session.send(bad)
            done = await session.state("t4.1-0", TERMINATED)
            assert done.failure is not None
            assert done.failure.type is FailureType.LAUNCH_ERROR
            assert "escape.txt" in done.failure.message
            assert RUNNING not in session.states("t4.1-0")
            (line,) = session.logs("t4.1-0")
            assert isinstance(line, ContainerLog) and line.level == "ERROR"
            assert "escape.txt" in line.message

    async def test_a_command_that_cannot_run_gets_its_output_reported(self, start_agent: Any):
        async with fake_master() as master, start_agent(master.port):
            session = await master.session(1)
            await session.send(start_message("t14.1-0", ["no-such-command-xyz"]))
            done = await session.state("t14.1-0", TERMINATED)
            assert done.exit_code == 127
            (line,) = session.logs("t14.1-0")
            assert line.level == "ERROR"
            assert "exited with code 127" in line.message
            assert "no-such-command-xyz: not found" in line.message

    async def test_sigkill_from_the_master(self, start_agent: Any, tmp_path: Path):
        async with fake_master() as master, start_agent(master.port):
            session = await master.session(1)
            await session.send(start_message("t5.1-0", gated_task(tmp_path, "c")))
            await running(session, "t5.1-0")
            await session.send(SignalContainer(container_id="t5.1-0", signal="SIGKILL"))
            done = await session.state("t5.1-0", TERMINATED)
            assert done.exit_code == 137

    async def test_a_slow_start_is_reported_starting_first(
        self, start_agent: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ):
        """A launch that outlasts STARTING_REPORT_S (here: any launch) says STARTING before
        RUNNING, so that a long image pull does not look like a container never picked up."""
        monkeypatch.setattr(containers, "STARTING_REPORT_S", 0.0)
        async with fake_master() as master, start_agent(master.port):
            session = await master.session(1)
            await session.send(start_message("t9.1-0", gated_task(tmp_path, "s")))
            await running(session, "t9.1-0")
            release(tmp_path, "s")
            await session.state("t9.1-0", TERMINATED)
            assert session.states("t9.1-0") == [ContainerState.STARTING, RUNNING, TERMINATED]

    async def test_a_repeated_start_is_ignored(
        self, start_agent: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ):
        monkeypatch.setattr(containers, "STARTING_REPORT_S", 60.0)
        async with fake_master() as master, start_agent(master.port):
            session = await master.session(1)
            message = start_message("t6.1-0", gated_task(tmp_path, "d"))
            await session.send(message)
            await running(session, "t6.1-0")
            await session.send(message)
            release(tmp_path, "d")
            await session.state("t6.1-0", TERMINATED)
            await asyncio.sleep(0.3)
            assert session.states("t6.1-0") == [RUNNING, TERMINATED]


class TestLiveness:
    async def test_heartbeats_at_the_masters_interval(self, start_agent: Any):
        async with fake_master(heartbeat_interval_s=0.1) as master, start_agent(master.port):
            session = await master.session(1)
            loop = asyncio.get_running_loop()
            began, before = loop.time(), session.heartbeats()
            await asyncio.sleep(1.0)
            sent, due = session.heartbeats() - before, (loop.time() - began) / 0.1
            # Paced by the master's interval: never faster, and not much slower on a busy box.
            assert due / 2 - 1 <= sent <= due + 1

    async def test_agent_shutdown_ends_the_agent(self, start_agent: Any, tmp_path: Path):
        async with fake_master() as master, start_agent(master.port) as agent:
            session = await master.session(1)
            await session.send(start_message("t7.1-0", gated_task(tmp_path, "e")))
            await running(session, "t7.1-0")
            await session.send(AgentShutdown(error="devices changed"))
            assert await agent.exit_code() == ExitCode.REFUSED
            assert agent.daemon.stats.refusal == "devices changed"
            # Detached, not killed: a restarted agent decides with the master.
            (found,) = await agent.runtime.find("agent-under-test")
            assert found.running

    async def test_refused_at_the_handshake(self, start_agent: Any):
        refusal = "resource pool 'gpu' does not exist"
        async with (
            fake_master(refuse=refusal) as master,
            start_agent(master.port, resource_pool="gpu") as agent,
        ):
            assert await agent.exit_code() == ExitCode.REFUSED
            assert agent.daemon.stats.refusal == refusal
            assert master.hellos[0]["resource_pool"] == "gpu"
            assert len(master.hellos) == 1  # a refusal is final: no retry

    async def test_graceful_stop_leaves_containers_running(self, start_agent: Any, tmp_path: Path):
        async with fake_master() as master, start_agent(master.port) as agent:
            session = await master.session(1)
            await session.send(start_message("t8.1-0", gated_task(tmp_path, "f")))
            await running(session, "t8.1-0")
            agent.daemon.stop()
            assert await agent.exit_code() == ExitCode.OK
            await asyncio.wait_for(session.closed.wait(), 10)
            (found,) = await agent.runtime.find("agent-under-test")
            assert found.running


class TestReconnect:
    async def test_master_restart_reattaches_the_running_container(
        self, start_agent: Any, tmp_path: Path
    ):
        async with fake_master() as master, start_agent(master.port):
            first = await master.session(1)
            await first.send(start_message("t9.1-0", gated_task(tmp_path, "g")))
            await running(first, "t9.1-0")
            master.to_reattach = (listed("t9.1-0"),)
            await master.restart()
            second = await master.session(2)
            assert second.query["reconnect"] == "true"
            (ack,) = second.started.containers_reattached
            assert ack.container.id == "t9.1-0"
            assert ack.container.state is RUNNING and ack.failure is None
            release(tmp_path, "g")
            done = await second.state("t9.1-0", TERMINATED)
            assert done.exit_code == 0
            # Nothing older than the acked state is repeated on the new connection.
            assert second.states("t9.1-0") == [TERMINATED]

    async def test_exit_while_disconnected_is_acked_then_reported(
        self, start_agent: Any, tmp_path: Path
    ):
        async with fake_master() as master, start_agent(master.port):
            first = await master.session(1)
            await first.send(start_message("t10.1-0", gated_task(tmp_path, "h", code=4)))
            await running(first, "t10.1-0")
            await master.stop()
            release(tmp_path, "h")
            await asyncio.sleep(0.5)  # the task exits while no master listens
            master.to_reattach = (listed("t10.1-0"),)
            await master.start()
            second = await master.session(2)
            (ack,) = second.started.containers_reattached
            assert ack.container.state is TERMINATED
            assert ack.failure is not None and ack.failure.exit_code == 4
            assert not ack.failure.agent_restarted  # this agent saw it exit
            done = await second.state("t10.1-0", TERMINATED)
            assert done.exit_code == 4
            await asyncio.sleep(0.3)
            assert second.states("t10.1-0") == [TERMINATED]

    async def test_a_task_killed_with_its_agent_is_found_dead_by_the_next_start(
        self, start_agent: Any, tmp_path: Path
    ):
        """The agent goes, the task is SIGKILLed while no agent runs; the agent's next start
        acks it TERMINATED with code 137 and says that it found it dead (agent_restarted)."""
        async with fake_master() as master, start_agent(master.port) as first_agent:
            first = await master.session(1)
            await first.send(start_message("t15.1-0", gated_task(tmp_path, "k")))
            await running(first, "t15.1-0")
            first_agent.daemon.stop()
            assert await first_agent.exit_code() == ExitCode.OK
            await first_agent.runtime.signal("t15.1-0", signal.SIGKILL)
            assert await first_agent.runtime.wait("t15.1-0") == 137
            master.to_reattach = (listed("t15.1-0"),)
            async with start_agent(master.port):
                second = await master.session(2)
                assert second.query["reconnect"] == "false"
                (ack,) = second.started.containers_reattached
                assert ack.container.state is TERMINATED
                assert ack.failure is not None and ack.failure.exit_code == 137
                assert ack.failure.agent_restarted
                done = await second.state("t15.1-0", TERMINATED)
                assert done.exit_code == 137
                assert done.failure is not None and done.failure.agent_restarted

    async def test_containers_the_master_no_longer_lists_are_killed(
        self, start_agent: Any, tmp_path: Path
    ):
        async with fake_master() as master, start_agent(master.port) as agent:
            first = await master.session(1)
            await first.send(start_message("t11.1-0", gated_task(tmp_path, "i")))
            await running(first, "t11.1-0")
            master.to_reattach = ()
            await master.restart()
            second = await master.session(2)
            assert second.started.containers_reattached == ()
            for _ in range(200):
                if not await agent.runtime.find("agent-under-test"):
                    break
                await asyncio.sleep(0.05)
            assert await agent.runtime.find("agent-under-test") == []
            await asyncio.sleep(0.3)
            assert second.states("t11.1-0") == []

    async def test_a_refused_reconnect_is_retried_as_a_fresh_start(
        self, start_agent: Any, tmp_path: Path
    ):
        async with fake_master() as master, start_agent(master.port) as agent:
            first = await master.session(1)
            await first.send(start_message("t13.1-0", gated_task(tmp_path, "k")))
            await running(first, "t13.1-0")
            master.refuse_reconnect = "agent is past its reconnect period; it must restart"
            master.to_reattach = ()  # the master gave up on its containers
            await master.restart()
            second = await master.session(2)
            assert [h["reconnect"] for h in master.hellos] == ["false", "true", "false"]
            assert second.started.containers_reattached == ()
            assert agent.daemon.stats.refusal == master.refuse_reconnect
            for _ in range(200):
                if not await agent.runtime.find("agent-under-test"):
                    break
                await asyncio.sleep(0.05)
            assert await agent.runtime.find("agent-under-test") == []

    async def test_a_listed_container_the_agent_lacks_is_acked_unknown(self, start_agent: Any):
        async with (
            fake_master(to_reattach=(listed("gone.1-0"),)) as master,
            start_agent(master.port),
        ):
            session = await master.session(1)
            (ack,) = session.started.containers_reattached
            assert ack.container.state is TERMINATED
            assert ack.failure is not None
            assert ack.failure.type is FailureType.UNKNOWN_CONTAINER

    async def test_out_of_attempts_runs_the_hook_and_exits(self, start_agent: Any, tmp_path: Path):
        marker = tmp_path / "hook-ran"
        async with fake_master() as master:
            port = master.port
            async with start_agent(
                port,
                agent_reconnect_attempts=3,
                agent_reconnect_backoff=0.2,
                master_outage_s=0,  # only the tries: no outage time to wait out
                hooks={"on_connection_lost": ["touch", str(marker)]},
            ) as agent:
                session = await master.session(1)
                await session.send(start_message("t12.1-0", gated_task(tmp_path, "j")))
                await running(session, "t12.1-0")
                await master.stop()
                started = asyncio.get_running_loop().time()
                assert await agent.exit_code() == ExitCode.CONNECTION_LOST
                elapsed = asyncio.get_running_loop().time() - started
                assert elapsed >= 3 * 0.2
                assert marker.exists()
                (found,) = await agent.runtime.find("agent-under-test")
                assert found.running
                assert len(master.hellos) == 1
