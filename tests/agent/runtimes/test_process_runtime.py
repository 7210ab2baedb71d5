"""What only the process runtime has to get right: pids that may be reused, a supervisor that
must outlive the agent, process groups standing in for a container's processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from agent.protocol import Device, DeviceType
from agent.runtimes import supervise
from agent.runtimes.base import LaunchFailed, RunRequest
from agent.runtimes.process import ProcessRuntime, task_argv, task_environment
from agent.task_python import TaskPython, agent_bin_dirs
from tests.agent.runtimes.conftest import eventually

REPO = Path(__file__).resolve().parents[3]
SLEEPER = (
    "import os, time, pathlib; pathlib.Path('pid').write_text(str(os.getpid())); time.sleep(120)"
)


def alive(pid: int) -> bool:
    return supervise.process_start_time(pid) is not None


def written(path: Path) -> bool:
    """The task has written the file (it exists before its text is in it)."""
    return path.exists() and path.read_text() != ""


def request(tmp: Path, *argv: str, agent_id: str = "a1", **fields: object) -> RunRequest:
    container_id = f"p{uuid.uuid4().hex[:10]}-0"
    return RunRequest(
        container_id=container_id,
        agent_id=agent_id,
        argv=argv,
        run_dir=tmp / "runs" / container_id,
        **fields,  # type: ignore[arg-type]
    )


@pytest.fixture
async def runtime(tmp_path: Path, task_venv: Path):
    rt = ProcessRuntime(tmp_path / "state", python=str(task_venv))
    yield rt
    for found in await rt.find("a1"):
        await rt.remove(found.container_id)
    await rt.close()


class TestPidReuse:
    async def test_a_reused_pid_is_never_taken_for_the_task(
        self, runtime: ProcessRuntime, tmp_path: Path
    ) -> None:
        # A stranger now holds the pids our records name, as after a reboot or pid wrap-around.
        stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
        try:
            await eventually(lambda: supervise.process_start_time(stranger.pid) is not None)
            real_start = supervise.process_start_time(stranger.pid)
            assert real_start is not None
            folder = tmp_path / "state" / "old-0"
            folder.mkdir(parents=True)
            for name in ("stdout.log", "stderr.log"):
                (folder / name).write_bytes(b"")
            record = {"container_id": "old-0", "agent_id": "a1", "labels": {}}
            supervise.write_json_atomically(folder / "record.json", record)

            def claim(start: int) -> None:
                pids = {"supervisor_pid": stranger.pid, "supervisor_start": start}
                pids |= {"child_pid": stranger.pid, "child_pgid": stranger.pid}
                supervise.write_json_atomically(
                    folder / supervise.PIDS_FILE, {**pids, "child_start": start}
                )

            claim(real_start + 1)
            [found] = await runtime.find("a1")
            assert (found.running, found.exit_code) == (False, 128 + signal.SIGKILL)
            assert await asyncio.wait_for(runtime.wait("old-0"), 5) == 128 + signal.SIGKILL
            await runtime.signal("old-0", signal.SIGKILL)
            await runtime.stop("old-0", grace_s=0.1)
            assert stranger.poll() is None, "a process that is not ours was signalled"

            # The start time is what tells them apart: with the right one it is "ours".
            claim(real_start)
            [found] = await runtime.find("a1")
            assert found.running
            await runtime.signal("old-0", signal.SIGTERM)
            assert stranger.wait(timeout=10) == -signal.SIGTERM
        finally:
            stranger.kill()
            stranger.wait()


class TestOutlivingTheAgent:
    async def test_a_task_keeps_running_after_the_agent_process_exits(
        self, tmp_path: Path, task_venv: Path
    ) -> None:
        state = tmp_path / "state"
        agent = textwrap.dedent(
            f"""
            import asyncio, os, sys
            from pathlib import Path
            from agent.runtimes.base import RunRequest
            from agent.runtimes.process import ProcessRuntime

            async def main():
                rt = ProcessRuntime(Path({str(state)!r}), python={str(task_venv)!r})
                await rt.start(RunRequest(container_id="kept-0", agent_id="a1",
                    argv=("python3", "-c", {SLEEPER!r}), run_dir=Path({str(tmp_path / "run")!r})))
                print("started", flush=True)
                os._exit(0)  # the agent dies without closing anything

            asyncio.run(main())
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", agent], cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip() == "started", done.stderr
        pid_file = tmp_path / "run" / "workdir" / "pid"
        await eventually(lambda: written(pid_file))
        task_pid = int(pid_file.read_text())
        await asyncio.sleep(0.3)
        assert alive(task_pid)

        runtime = ProcessRuntime(state)
        [found] = await runtime.find("a1")
        assert found.container_id == "kept-0" and found.running
        await runtime.stop("kept-0", grace_s=10)
        assert await runtime.wait("kept-0") == 128 + signal.SIGTERM
        assert not alive(task_pid)
        await runtime.remove("kept-0")

    async def test_a_task_dies_with_its_supervisor_and_is_reported_killed(
        self, runtime: ProcessRuntime, tmp_path: Path
    ) -> None:
        req = request(tmp_path, "python3", "-c", SLEEPER)
        await runtime.start(req)
        pid_file = req.run_dir / "workdir" / "pid"
        await eventually(lambda: written(pid_file))
        task_pid = int(pid_file.read_text())
        folder = tmp_path / "state" / req.container_id
        pids = json.loads((folder / supervise.PIDS_FILE).read_text())
        assert pids["child_pid"] == task_pid

        os.kill(pids["supervisor_pid"], signal.SIGKILL)
        assert await asyncio.wait_for(runtime.wait(req.container_id), 10) == 128 + signal.SIGKILL
        await eventually(lambda: not alive(task_pid), timeout_s=10)
        [found] = await ProcessRuntime(tmp_path / "state").find("a1")
        assert (found.running, found.exit_code) == (False, 128 + signal.SIGKILL)


class TestRemovalRace:
    async def test_a_removal_that_finds_the_task_removed_under_it_succeeds(
        self, runtime: ProcessRuntime, tmp_path: Path
    ) -> None:
        # Two removers (the agent's cleanup and a reattached runtime) both saw the task running;
        # the first one finished, folder and all, before the second one signalled it. Seen once
        # in CI as UnknownContainer from the contract test's three removals at the same time.
        req = request(tmp_path, "python3", "-c", SLEEPER)
        await runtime.start(req)
        await eventually(lambda: written(req.run_dir / "workdir" / "pid"))
        second = ProcessRuntime(tmp_path / "state")
        signal_task = second.signal

        async def signal_after_the_first_removal(container_id: str, signum: int) -> None:
            await runtime.remove(container_id)
            await signal_task(container_id, signum)

        second.signal = signal_after_the_first_removal  # type: ignore[method-assign]
        await asyncio.wait_for(second.remove(req.container_id), 20)
        assert await runtime.find("a1") == []
        assert not (tmp_path / "state" / req.container_id).exists()


class TestProcessGroup:
    async def test_what_the_task_leaves_behind_ends_with_it(
        self, runtime: ProcessRuntime, tmp_path: Path
    ) -> None:
        program = (
            "import subprocess, pathlib\n"
            "p = subprocess.Popen(['sleep', '120'])\n"
            "pathlib.Path('grandchild').write_text(str(p.pid))\n"
        )
        req = request(tmp_path, "python3", "-c", program)
        await runtime.start(req)
        assert await runtime.wait(req.container_id) == 0
        grandchild = int((req.run_dir / "workdir" / "grandchild").read_text())
        await eventually(lambda: not alive(grandchild), timeout_s=5)

    async def test_stop_reaches_every_process_of_the_task(
        self, runtime: ProcessRuntime, tmp_path: Path
    ) -> None:
        program = (
            "import subprocess, pathlib, time\n"
            "p = subprocess.Popen(['sleep', '120'])\n"
            "pathlib.Path('grandchild').write_text(str(p.pid))\n"
            "time.sleep(120)\n"
        )
        req = request(tmp_path, "python3", "-c", program)
        await runtime.start(req)
        marker = req.run_dir / "workdir" / "grandchild"
        # Written, not merely there: the file exists a moment before its pid is in it.
        await eventually(lambda: written(marker))
        grandchild = int(marker.read_text())
        await runtime.stop(req.container_id, grace_s=10)
        assert await runtime.wait(req.container_id) == 128 + signal.SIGTERM
        # The supervisor's SIGKILL to the group is sent before the exit is recorded, but a loaded
        # machine may not have run the grandchild's exit yet: it must die, not already be dead.
        await eventually(lambda: not alive(grandchild))


class TestTaskSetup:
    async def test_python3_is_the_task_python_never_the_agents_own(
        self, runtime: ProcessRuntime, tmp_path: Path, task_venv: Path
    ) -> None:
        code = "import sys; print(sys.executable); print(sys.prefix)"
        req = request(tmp_path, "python3", "-c", code)
        await runtime.start(req)
        assert await runtime.wait(req.container_id) == 0
        out = b"".join([c async for s, c in runtime.logs(req.container_id) if s == "stdout"])
        executable, prefix = out.decode().split()
        assert (executable, prefix) == (str(task_venv / "bin" / "python3"), str(task_venv))
        assert executable != sys.executable

    async def test_without_a_task_python_the_launch_fails(self, tmp_path: Path) -> None:
        bare = ProcessRuntime(tmp_path / "state")  # never falls back to the agent's interpreter
        with pytest.raises(LaunchFailed, match="no Python for the task"):
            await bare.start(request(tmp_path, "python3", "-V"))
        assert await bare.find("a1") == []

    async def test_a_task_python_that_is_not_there_fails_the_launch(
        self, runtime: ProcessRuntime, tmp_path: Path
    ) -> None:
        missing = str(tmp_path / "nowhere" / "bin" / "python3")
        with pytest.raises(LaunchFailed, match="no such file or directory"):
            await runtime.start(request(tmp_path, "python3", "-V", python=missing))
        assert await runtime.find("a1") == []

    async def test_agent_settings_do_not_leak_into_the_task(
        self,
        runtime: ProcessRuntime,
        tmp_path: Path,
        task_venv: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.setenv("DET_MASTER_HOST", "agent-only")
        monkeypatch.setenv("PYTHONPATH", "/agent/only")
        monkeypatch.setenv("VIRTUAL_ENV", "/agent/venv")
        program = "import json, os; json.dump(dict(os.environ), open('env.json', 'w'))"
        req = request(tmp_path, "python3", "-c", program, environment={"DET_TASK_ID": "1"})
        await runtime.start(req)
        assert await runtime.wait(req.container_id) == 0
        env = json.loads((req.run_dir / "workdir" / "env.json").read_text())
        assert "DET_MASTER_HOST" not in env
        assert "/agent/only" not in env["PYTHONPATH"]
        assert env["DET_TASK_ID"] == "1"
        first, *rest = env["PATH"].split(os.pathsep)
        assert first == str(task_venv / "bin")
        hidden = {first, *agent_bin_dirs()}
        assert rest == [p for p in os.environ["PATH"].split(os.pathsep) if p and p not in hidden]
        assert env["VIRTUAL_ENV"] == str(task_venv)

    async def test_bad_container_ids_are_refused(
        self, runtime: ProcessRuntime, tmp_path: Path
    ) -> None:
        for bad in ("../escape", "", "a/b", ".hidden"):
            req = RunRequest(container_id=bad, agent_id="a1", argv=("true",), run_dir=tmp_path)
            with pytest.raises(LaunchFailed, match="invalid container id"):
                await runtime.start(req)


class TestEnvironmentRules:
    def test_cuda_devices_become_cuda_visible_devices(self, tmp_path: Path) -> None:
        gpus = (
            Device(id=0, uuid="GPU-aaaa", type=DeviceType.CUDA),
            Device(id=3, type=DeviceType.CUDA),
        )
        env = task_environment(
            request(tmp_path, "x", devices=gpus), {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, tmp_path
        )
        assert env["CUDA_VISIBLE_DEVICES"] == "GPU-aaaa,3"

    def test_a_task_without_gpus_sees_none(self, tmp_path: Path) -> None:
        cpu = (Device(id=0, type=DeviceType.CPU),)
        env = task_environment(
            request(tmp_path, "x", devices=cpu), {"CUDA_VISIBLE_DEVICES": "0"}, tmp_path
        )
        assert env["CUDA_VISIBLE_DEVICES"] == ""

    def test_the_tasks_own_pythonpath_follows_pylib(self, tmp_path: Path) -> None:
        req = request(tmp_path, "x", environment={"PYTHONPATH": "/user/lib"})
        env = task_environment(req, {}, tmp_path / "run")
        assert env["PYTHONPATH"] == f"{tmp_path}/run/pylib:/user/lib"

    def test_the_task_pythons_folder_comes_first_and_the_agents_venv_goes(
        self, tmp_path: Path
    ) -> None:
        inherited = {"PATH": "/usr/bin:/agent/bin:/task/bin:/bin", "VIRTUAL_ENV": "/agent"}
        python = TaskPython("/task/bin/python", "/task/bin", venv="/task")
        env = task_environment(request(tmp_path, "x"), inherited, tmp_path, python, ("/agent/bin",))
        assert env["PATH"] == "/task/bin:/usr/bin:/bin"
        assert env["VIRTUAL_ENV"] == "/task"
        plain = TaskPython("/opt/py/bin/python3.12", "/opt/py/bin")
        env = task_environment(request(tmp_path, "x"), inherited, tmp_path, plain, ())
        assert env["PATH"].startswith("/opt/py/bin:") and "VIRTUAL_ENV" not in env
        own = request(tmp_path, "x", environment={"PATH": "/mine/bin"})
        assert task_environment(own, inherited, tmp_path, python)["PATH"] == (
            "/mine/bin"
        )  # a PATH the task asked for is its own business

    def test_only_python_names_are_mapped_to_the_task_python(self) -> None:
        assert task_argv(("python3", "-m", "x"), "/venv/bin/python") == [
            "/venv/bin/python",
            "-m",
            "x",
        ]
        assert task_argv(("python",), "/p") == ["/p"]
        assert task_argv(("python3.11", "-V"), "/p") == ["python3.11", "-V"]
