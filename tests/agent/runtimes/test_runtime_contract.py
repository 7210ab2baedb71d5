"""The ContainerRuntime contract (agent/runtimes/base.py), run against every runtime.

Real processes and a real Docker engine; each task is a short Python program run as ``python3``.
Where the runtimes differ by design (read-only mounts and images mean nothing to the process
runtime), the test says so when it skips.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from agent.protocol import Mount
from agent.runtimes.base import LABEL_PREFIX, LaunchFailed, RunRequest, UnknownContainer
from tests.agent.runtimes.conftest import Box, collect_logs, eventually

# Enough containers at once that the engine's follow drops a last line in most runs (20.10).
LAST_LINE_CONTAINERS = 24
# Runs until killed; writes workdir/ready once its signal handling is in place.
SLEEPER = "import time, pathlib; pathlib.Path('ready').write_text('1'); time.sleep(120)"
IGNORES_SIGTERM = (
    "import signal, time, pathlib; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "pathlib.Path('ready').write_text('1'); time.sleep(120)"
)


def workdir(request_run_dir: Path) -> Path:
    return request_run_dir / "workdir"


class TestStartAndWait:
    @pytest.mark.parametrize("code", [0, 3])
    async def test_wait_returns_the_exit_code(self, box: Box, code: int) -> None:
        request = box.request("python3", "-c", f"import sys; sys.exit({code})")
        await box.runtime.start(request)
        assert await box.runtime.wait(request.container_id) == code

    async def test_wait_again_after_the_end_gives_the_same_code(self, box: Box) -> None:
        request = box.request("python3", "-c", "raise SystemExit(9)")
        await box.runtime.start(request)
        assert await box.runtime.wait(request.container_id) == 9
        assert await box.runtime.wait(request.container_id) == 9

    async def test_the_task_sees_its_environment_run_dir_and_pylib(self, box: Box) -> None:
        probe = (
            "import json, os, sys, probe_mod; json.dump({'env': dict(os.environ), "
            "'cwd': os.getcwd(), 'probe': probe_mod.VALUE}, open('seen.json', 'w'))"
        )
        request = box.request(
            "python3", "-c", probe, environment={"FOO": "bar baz", "DET_TASK_ID": "7"}
        )
        (request.run_dir / "pylib" / "probe_mod.py").write_text("VALUE = 'from pylib'\n")
        await box.runtime.start(request)
        assert await box.runtime.wait(request.container_id) == 0

        seen = json.loads((workdir(request.run_dir) / "seen.json").read_text())
        run_dir = box.run_dir_seen_by_task(request)
        env = seen["env"]
        assert env["FOO"] == "bar baz"
        assert env["DET_TASK_ID"] == "7"
        assert env["DET_RUN_DIR"] == run_dir
        assert env["DET_WORKDIR"] == f"{run_dir}/workdir"
        assert seen["cwd"] == f"{run_dir}/workdir"
        assert env["PYTHONPATH"].split(":")[0] == f"{run_dir}/pylib"
        assert seen["probe"] == "from pylib"

    async def test_a_shared_pylib_comes_first_and_tasks_cannot_change_it(self, box: Box) -> None:
        pylib = box.tmp / "shared-pylib"
        pylib.mkdir(exist_ok=True)
        (pylib / "probe_mod.py").write_text("VALUE = 'shared'\n")
        (pylib / "probe_mod.py").chmod(0o444)
        probe = (
            "import json, os, probe_mod\n"
            "try:\n    open(probe_mod.__file__, 'a').write('# changed')\n    wrote = True\n"
            "except OSError:\n    wrote = False\n"
            "json.dump({'path': os.environ['PYTHONPATH'], 'file': probe_mod.__file__, "
            "'wrote': wrote, 'value': probe_mod.VALUE}, open('seen.json', 'w'))"
        )
        request = box.request("python3", "-c", probe, pylib=pylib)
        await box.runtime.start(request)
        assert await box.runtime.wait(request.container_id) == 0
        seen = json.loads((workdir(request.run_dir) / "seen.json").read_text())
        where = f"{box.run_dir_seen_by_task(request)}/pylib" if box.kind == "docker" else str(pylib)
        assert seen["path"].split(":")[0] == where
        assert seen["file"] == f"{where}/probe_mod.py" and seen["value"] == "shared"
        if box.kind == "docker" or os.geteuid() != 0:  # root ignores file modes on the host
            assert not seen["wrote"]
            assert (pylib / "probe_mod.py").read_text() == "VALUE = 'shared'\n"

    async def test_a_missing_executable_exits_127_and_says_why(self, box: Box) -> None:
        # Same for both: the container starts, exits 127, and its stderr names the command.
        request = box.request("resolute-no-such-command", "--flag")
        await box.runtime.start(request)
        assert await box.runtime.wait(request.container_id) == 127
        logs = await collect_logs(box.runtime, request.container_id)
        assert b"resolute-no-such-command" in logs["stderr"]
        assert b"No such file or directory" in logs["stderr"]

    async def test_a_duplicate_container_id_is_refused(self, box: Box) -> None:
        request = box.request("python3", "-c", "pass")
        await box.runtime.start(request)
        with pytest.raises(LaunchFailed, match="already exists"):
            await box.runtime.start(request)

    async def test_unknown_containers_are_reported_as_such(self, box: Box) -> None:
        with pytest.raises(UnknownContainer):
            await box.runtime.wait("never-started-0")
        with pytest.raises(UnknownContainer):
            await box.runtime.signal("never-started-0", signal.SIGTERM)


class TestMounts:
    async def test_a_file_written_in_a_rw_mount_is_on_the_host(self, box: Box) -> None:
        data = box.tmp / "data"
        data.mkdir()
        target = box.mount_target(data)
        request = box.request(
            "python3",
            "-c",
            f"open('{target}/out.txt', 'w').write('written by the task')",
            mounts=(Mount(host_path=str(data), container_path=target),),
        )
        await box.runtime.start(request)
        assert await box.runtime.wait(request.container_id) == 0
        assert (data / "out.txt").read_text() == "written by the task"

    async def test_a_read_only_mount_cannot_be_written(self, box: Box) -> None:
        if box.kind == "process":
            pytest.skip("the process runtime leaves mounts in place; it cannot make them read-only")
        data = box.tmp / "ro"
        data.mkdir()
        (data / "given.txt").write_text("input")
        target = box.mount_target(data)
        program = (
            "import sys\n"
            f"assert open('{target}/given.txt').read() == 'input'\n"
            "try:\n"
            f"    open('{target}/new.txt', 'w')\n"
            "except OSError as exc:\n"
            "    sys.exit(40 if exc.errno == 30 else 41)\n"  # 30: EROFS
        )
        request = box.request(
            "python3",
            "-c",
            program,
            mounts=(Mount(host_path=str(data), container_path=target, read_only=True),),
        )
        await box.runtime.start(request)
        assert await box.runtime.wait(request.container_id) == 40
        assert not (data / "new.txt").exists()

    async def test_a_missing_image_is_a_launch_failure(self, box: Box) -> None:
        if box.kind == "process":
            pytest.skip("the process runtime ignores images")
        request = box.request("python3", "-c", "pass", image="resolute-no-such-image:never")
        with pytest.raises(LaunchFailed, match="'resolute-no-such-image:never' not found"):
            await box.runtime.start(request)
        assert await box.runtime.find(box.agent_id) == []


class TestFindAfterRestart:
    async def test_a_new_runtime_finds_running_and_exited_containers(self, box: Box) -> None:
        running = box.request("python3", "-c", SLEEPER, labels={f"{LABEL_PREFIX}.extra": "x"})
        exited = box.request("python3", "-c", "raise SystemExit(5)")
        await box.runtime.start(running)
        await box.runtime.start(exited)
        assert await box.runtime.wait(exited.container_id) == 5
        await eventually(lambda: (workdir(running.run_dir) / "ready").exists())

        after_restart = box.fresh_runtime()
        found = {f.container_id: f for f in await after_restart.find(box.agent_id)}
        assert set(found) == {running.container_id, exited.container_id}
        assert found[running.container_id].running
        assert found[running.container_id].exit_code is None
        assert not found[exited.container_id].running
        assert found[exited.container_id].exit_code == 5
        labels = found[running.container_id].labels
        assert labels[f"{LABEL_PREFIX}.type"] == "task-container"
        assert labels[f"{LABEL_PREFIX}.id"] == running.container_id
        assert labels[f"{LABEL_PREFIX}.agent"] == box.agent_id
        assert labels[f"{LABEL_PREFIX}.extra"] == "x"
        assert await after_restart.find("some-other-agent") == []

        assert await after_restart.wait(exited.container_id) == 5
        waiting = asyncio.create_task(after_restart.wait(running.container_id))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await after_restart.signal(running.container_id, signal.SIGTERM)
        assert await asyncio.wait_for(waiting, 20) == 128 + signal.SIGTERM
        found = {f.container_id: f for f in await after_restart.find(box.agent_id)}
        assert found[running.container_id].exit_code == 128 + signal.SIGTERM

    async def test_logs_of_a_reattached_container_start_from_the_beginning(self, box: Box) -> None:
        request = box.request("python3", "-c", "print('before the restart')")
        await box.runtime.start(request)
        await box.runtime.wait(request.container_id)
        logs = await collect_logs(box.fresh_runtime(), request.container_id)
        assert logs["stdout"] == b"before the restart\n"


class TestSignals:
    async def test_stop_kills_a_task_that_ignores_sigterm_after_the_grace(self, box: Box) -> None:
        request = box.request("python3", "-c", IGNORES_SIGTERM)
        await box.runtime.start(request)
        await eventually(lambda: (workdir(request.run_dir) / "ready").exists())
        began = time.monotonic()
        await box.runtime.stop(request.container_id, grace_s=1.0)
        took = time.monotonic() - began
        assert await box.runtime.wait(request.container_id) == 128 + signal.SIGKILL
        assert 0.9 <= took < 10

    async def test_stop_ends_a_cooperative_task_within_the_grace(self, box: Box) -> None:
        request = box.request("python3", "-c", SLEEPER)
        await box.runtime.start(request)
        await eventually(lambda: (workdir(request.run_dir) / "ready").exists())
        began = time.monotonic()
        await box.runtime.stop(request.container_id, grace_s=30.0)
        assert time.monotonic() - began < 10
        assert await box.runtime.wait(request.container_id) == 128 + signal.SIGTERM

    async def test_a_signal_reaches_the_task(self, box: Box) -> None:
        program = (
            "import signal, sys, time, pathlib\n"
            "signal.signal(signal.SIGUSR1, lambda *_: sys.exit(42))\n"
            "pathlib.Path('ready').write_text('1')\n"
            "time.sleep(120)\n"
        )
        request = box.request("python3", "-c", program)
        await box.runtime.start(request)
        await eventually(lambda: (workdir(request.run_dir) / "ready").exists())
        await box.runtime.signal(request.container_id, signal.SIGUSR1)
        assert await asyncio.wait_for(box.runtime.wait(request.container_id), 20) == 42

    async def test_signalling_or_stopping_an_exited_container_does_nothing(self, box: Box) -> None:
        request = box.request("python3", "-c", "pass")
        await box.runtime.start(request)
        assert await box.runtime.wait(request.container_id) == 0
        await box.runtime.signal(request.container_id, signal.SIGKILL)
        await box.runtime.stop(request.container_id, grace_s=0.5)
        assert await box.runtime.wait(request.container_id) == 0


class TestLogs:
    async def test_stdout_and_stderr_stream_apart_and_bytes_survive(self, box: Box) -> None:
        binary = bytes(range(256))
        long_line = b"x" * (1 << 20)
        program = (
            "import sys, os, time\n"
            "o = sys.stdout.buffer\n"
            "o.write(b'first\\n'); o.flush()\n"
            "while not os.path.exists('go'): time.sleep(0.02)\n"
            "o.write(bytes(range(256)) + b'\\n'); o.flush()\n"
            "o.write(b'x' * (1 << 20) + b'\\n'); o.flush()\n"
            "sys.stderr.write('to stderr\\n'); sys.stderr.flush()\n"
            "o.write(b'end\\n'); o.flush()\n"
        )
        request = box.request("python3", "-c", program)
        await box.runtime.start(request)
        out = {"stdout": bytearray(), "stderr": bytearray()}
        async for stream, chunk in box.runtime.logs(request.container_id):
            out[stream] += chunk
            # Output arrives while the task runs: it only goes on once we have seen "first".
            if out["stdout"] == b"first\n":
                (workdir(request.run_dir) / "go").write_text("")
        assert await box.runtime.wait(request.container_id) == 0

        stdout = bytes(out["stdout"])
        expected = b"first\n" + binary + b"\n" + long_line + b"\nend\n"
        if box.kind == "docker":
            # The engine's `local` log driver (20.10) keeps every byte but drops the newline
            # that ends a line it had to split (lines over 16 KiB): documented in runtimes.md.
            assert stdout in (expected, expected.replace(long_line + b"\n", long_line))
        else:
            assert stdout == expected
        assert bytes(out["stderr"]) == b"to stderr\n"

    async def test_logs_end_when_the_task_ends(self, box: Box) -> None:
        request = box.request("python3", "-c", "import time; print('a', flush=True); time.sleep(1)")
        await box.runtime.start(request)
        logs = await asyncio.wait_for(collect_logs(box.runtime, request.container_id), 20)
        assert logs == {"stdout": b"a\n", "stderr": b""}

    async def test_a_last_line_without_a_newline_is_never_lost(self, box: Box) -> None:
        """The engine's follow can end without a stream's unfinished last line (moby/moby#43860;
        one container in a few dozen on 20.10): the runtime reads the log again after it."""
        script = "echo out 1; printf 'no newline'; printf 'err' >&2"
        requests = [box.request("sh", "-c", script) for _ in range(LAST_LINE_CONTAINERS)]

        async def run(request: RunRequest) -> dict[str, bytes]:
            await box.runtime.start(request)
            return await asyncio.wait_for(collect_logs(box.runtime, request.container_id), 60)

        for logs in await asyncio.gather(*(run(r) for r in requests)):
            assert logs == {"stdout": b"out 1\nno newline", "stderr": b"err"}

    async def test_logs_since_give_only_what_comes_after(self, box: Box) -> None:
        """An agent that restarts follows a container found running from then on (``since``)."""
        program = (
            "import os, sys, time\n"
            "print('early', flush=True); print('early err', file=sys.stderr, flush=True)\n"
            "while not os.path.exists('go'): time.sleep(0.02)\n"
            "print('late', flush=True); print('late err', file=sys.stderr, flush=True)\n"
        )
        request = box.request("python3", "-c", program)
        await box.runtime.start(request)
        seen = bytearray()
        async for _stream, chunk in box.runtime.logs(request.container_id):
            seen += chunk
            if b"early\n" in seen:
                break
        await asyncio.sleep(0.1)  # the engine's timestamps: "since" is strictly after them
        since = time.time()
        reader = asyncio.ensure_future(collect_since(box.runtime, request.container_id, since))
        await asyncio.sleep(0.3)  # the reader is following before the task prints on
        (workdir(request.run_dir) / "go").write_text("")
        logs = await asyncio.wait_for(reader, 20)
        assert logs == {"stdout": b"late\n", "stderr": b"late err\n"}


class TestRemove:
    async def test_remove_forgets_an_exited_container(self, box: Box) -> None:
        request = box.request("python3", "-c", "pass")
        await box.runtime.start(request)
        await box.runtime.wait(request.container_id)
        await box.runtime.remove(request.container_id)
        assert await box.runtime.find(box.agent_id) == []
        assert await box.fresh_runtime().find(box.agent_id) == []
        with pytest.raises(UnknownContainer):
            await box.runtime.wait(request.container_id)
        await box.runtime.remove(request.container_id)  # again: nothing to do

    async def test_remove_kills_a_running_container(self, box: Box) -> None:
        request = box.request("python3", "-c", IGNORES_SIGTERM)
        await box.runtime.start(request)
        await eventually(lambda: (workdir(request.run_dir) / "ready").exists())
        await asyncio.wait_for(box.runtime.remove(request.container_id), 20)
        assert await box.runtime.find(box.agent_id) == []

    async def test_removals_at_the_same_time_all_succeed(self, box: Box) -> None:
        # The agent's cleanup and a reattach (or a second runtime object) may race.
        request = box.request("python3", "-c", IGNORES_SIGTERM)
        await box.runtime.start(request)
        await eventually(lambda: (workdir(request.run_dir) / "ready").exists())
        other = box.fresh_runtime()
        await asyncio.wait_for(
            asyncio.gather(
                box.runtime.remove(request.container_id),
                other.remove(request.container_id),
                box.runtime.remove(request.container_id),
            ),
            30,
        )
        assert await box.runtime.find(box.agent_id) == []


async def collect_since(runtime: Any, container_id: str, since: float) -> dict[str, bytes]:
    out: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
    async for stream, chunk in runtime.logs(container_id, since=since):
        out[stream] += chunk
    return {k: bytes(v) for k, v in out.items()}
