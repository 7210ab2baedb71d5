"""The agent as its own process (`python -m agent`): CLI, the real master, kill -9 and restart."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.daemon import ExitCode
from agent.devices import parse_cpuinfo
from agent.protocol import Container, ContainerState
from agent.runtimes.process import ProcessRuntime
from tests.agent.conftest import py, start_message
from tests.support.fake_master import fake_master
from tests.support.live_master import LiveMaster, eventually, master_starter

REPO = Path(__file__).resolve().parents[2]
RUNNING, TERMINATED = ContainerState.RUNNING, ContainerState.TERMINATED
pytestmark = pytest.mark.slow


@dataclass
class AgentProcess:
    proc: asyncio.subprocess.Process
    log: Path

    async def exit_code(self, timeout: float = 30.0) -> int:
        return await asyncio.wait_for(self.proc.wait(), timeout)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
async def spawn(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Start `python -m agent ARGS`; every agent left is SIGTERMed, then SIGKILLed."""
    made: list[AgentProcess] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}

    async def start(*args: str) -> AgentProcess:
        log = tmp_path / f"agent-{len(made)}.log"
        with log.open("wb") as out:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "agent", *args, cwd=REPO, env=env,
                stdout=out, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
        made.append(AgentProcess(proc, log))
        return made[-1]

    yield start
    for agent in made:
        if agent.proc.returncode is None:
            agent.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(agent.proc.wait(), 10)
            except TimeoutError:
                agent.proc.kill()
                await agent.proc.wait()


def agent_args(port: int, work_dir: Path, *extra: str, agent_id: str = "proc-agent") -> list[str]:
    return [
        "--master-host", "127.0.0.1", "--master-port", str(port), "--agent-id", agent_id,
        "--work-dir", str(work_dir), "--container-runtime", "process",
        "--agent-reconnect-attempts", "3", "--agent-reconnect-backoff", "0.2", *extra,
    ]  # fmt: skip


async def remove_all(work_dir: Path, agent_id: str) -> None:
    runtime = ProcessRuntime(work_dir / "process")
    for found in await runtime.find(agent_id):
        await runtime.remove(found.container_id)


class TestCommandLine:
    async def test_help(self, spawn: Any):
        agent = await spawn("--help")
        assert await agent.exit_code() == 0
        out = agent.output()
        for flag in ("--master-host", "--hooks-on-connection-lost", "--security-tls-enabled"):
            assert flag in out

    @pytest.mark.parametrize(
        ("args", "problem"),
        [
            ([], "master_host: Field required"),
            (["--master-host", "m", "--master-port", "http"], "master_port: "),
            (["--master-host", "m", "--slot-type", "rocm"], "slot_type: rocm"),
            (["--master-host", "m", "--hooks-on-connection-lost", "'unclosed"], "CMD"),
        ],
    )
    async def test_bad_configuration_exits_2(self, spawn: Any, args: list[str], problem: str):
        agent = await spawn(*args)
        assert await agent.exit_code() == ExitCode.CONFIG
        out = agent.output()
        assert problem in out
        assert "Traceback" not in out

    async def test_unreachable_master_exits_3(self, spawn: Any, tmp_path: Path):
        from tests.support.live_master import free_port

        args = agent_args(free_port(), tmp_path / "w", "--artificial-slots", "1")
        agent = await spawn(*args)
        assert await agent.exit_code() == ExitCode.CONNECTION_LOST
        assert agent.output().count("connecting to the master (try") == 4  # 1 + 3 retries


class TestKillAndRestart:
    async def test_kill_9_then_restart_reattaches_and_kills_strays(
        self, spawn: Any, tmp_path: Path
    ):
        work = tmp_path / "w"
        gate = tmp_path / "gate"
        waiting = py(
            f"""
            import os, time
            while not os.path.exists({str(gate)!r}):
                time.sleep(0.02)
            """
        )
        try:
            async with fake_master() as master:
                first = await spawn(*agent_args(master.port, work, "--artificial-slots", "2"))
                s1 = await master.session(1)
                await s1.send(start_message("keep.1-0", waiting, slots=(0,)))
                await s1.send(start_message("stray.1-0", waiting, slots=(1,)))
                await s1.state("keep.1-0", RUNNING)
                await s1.state("stray.1-0", RUNNING)
                first.proc.kill()
                assert await first.exit_code() == -signal.SIGKILL
                await asyncio.wait_for(s1.closed.wait(), 10)

                runtime = ProcessRuntime(work / "process")
                alive = {f.container_id: f.running for f in await runtime.find("proc-agent")}
                assert alive == {"keep.1-0": True, "stray.1-0": True}

                master.to_reattach = (Container(id="keep.1-0", state=RUNNING),)
                await spawn(*agent_args(master.port, work, "--artificial-slots", "2"))
                s2 = await master.session(2)
                assert s2.query["reconnect"] == "false"
                (ack,) = s2.started.containers_reattached
                assert (ack.container.id, ack.container.state, ack.failure) == (
                    "keep.1-0",
                    RUNNING,
                    None,
                )

                async def stray_gone() -> bool:
                    ids = {f.container_id for f in await runtime.find("proc-agent")}
                    return ids == {"keep.1-0"}

                await eventually(stray_gone, timeout=15)
                gate.touch()
                done = await s2.state("keep.1-0", TERMINATED)
                assert done.exit_code == 0
                assert s2.states("stray.1-0") == []
        finally:
            await remove_all(work, "proc-agent")


@pytest.fixture
async def start_master(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    async with master_starter(f"sqlite+aiosqlite:///{tmp_path / 'm.db'}", tmp_path) as start:
        yield start


async def agents_of(m: LiveMaster) -> dict[str, Any]:
    return {a["id"]: a for a in (await m.get("/api/v1/agents"))["agents"]}


class TestAgainstTheRealMaster:
    async def test_registers_with_detected_slots_and_leaves_on_sigterm(
        self, spawn: Any, start_master: Any, tmp_path: Path
    ):
        m = await start_master()
        port = int(m.url.rsplit(":", 1)[1])
        agent = await spawn(*agent_args(port, tmp_path / "w", "--slot-type", "cpu"))

        async def listed() -> Any:
            agent_view = (await agents_of(m)).get("proc-agent")
            return agent_view if agent_view and agent_view["connected"] else None

        view = await eventually(listed, timeout=20)
        (slot,) = view["slots"].values()
        vendor, brand = parse_cpuinfo(Path("/proc/cpuinfo").read_text(), os.uname().machine)
        assert slot["device"]["type"] == "TYPE_CPU"
        assert (slot["device"]["brand"], slot["device"]["uuid"]) == (brand, vendor)
        assert view["resourcePools"] == ["default"]

        agent.proc.send_signal(signal.SIGTERM)
        assert await agent.exit_code() == ExitCode.OK

        async def disconnected() -> bool:
            return (await agents_of(m))["proc-agent"]["connected"] is False

        await eventually(disconnected, timeout=10)

    async def test_unknown_pool_is_refused_with_the_masters_reason(
        self, spawn: Any, start_master: Any, tmp_path: Path
    ):
        m = await start_master()
        port = int(m.url.rsplit(":", 1)[1])
        args = agent_args(port, tmp_path / "w", "--artificial-slots", "1")
        agent = await spawn(*args, "--resource-pool", "nope")
        assert await agent.exit_code() == ExitCode.REFUSED
        assert "resource pool 'nope' does not exist" in agent.output()
        assert "proc-agent" not in await agents_of(m)

    async def test_a_duplicate_id_is_refused_and_the_first_keeps_working(
        self, spawn: Any, start_master: Any, tmp_path: Path
    ):
        m = await start_master()
        port = int(m.url.rsplit(":", 1)[1])
        first = await spawn(*agent_args(port, tmp_path / "w1", "--artificial-slots", "1"))

        async def connected() -> bool:
            view = (await agents_of(m)).get("proc-agent")
            return bool(view and view["connected"])

        await eventually(connected, timeout=20)
        second = await spawn(*agent_args(port, tmp_path / "w2", "--artificial-slots", "1"))
        assert await second.exit_code() == ExitCode.REFUSED
        assert "already connected" in second.output()
        assert first.proc.returncode is None
        assert await connected()

    async def test_heartbeats_keep_a_quiet_agent_connected(
        self, start_master: Any, start_agent: Any
    ):
        m = await start_master(agent_heartbeat_interval_s=0.2, agent_liveness_timeout_s=1.0)
        port = int(m.url.rsplit(":", 1)[1])
        async with start_agent(port) as agent:
            await asyncio.wait_for(agent.daemon.connected.wait(), 20)
            await asyncio.sleep(3.0)  # three liveness timeouts with nothing but heartbeats
            assert agent.daemon.stats.sessions == 1
            assert agent.daemon.stats.heartbeats >= 10
            view = (await agents_of(m))["agent-under-test"]
            assert view["connected"] is True
            assert len(view["slots"]) == 2
