"""The launcher's decisions, and the launcher as a real process off a cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.exec.launch import LaunchSettings, exit_code, legacy_command

REPO = Path(__file__).resolve().parents[2]


def launcher_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


@pytest.mark.parametrize(
    ("argv", "legacy"),
    [
        (["model_def:MyTrial"], True),
        (["pkg.model_def:Trial_2"], True),
        (["python3", "train.py"], False),
        (["python3", "model_def:MyTrial"], False),
        (["http://host:80"], False),
    ],
)
def test_legacy_entrypoint_runs_the_pytorch_trainer(argv: list[str], legacy: bool) -> None:
    command = legacy_command(argv)
    if legacy:
        assert command == ["python3", "-m", "harness.pytorch._legacy", argv[0]]
    else:
        assert command is None


@pytest.mark.parametrize(("code", "expected"), [(0, 0), (3, 3), (-15, 143), (-9, 137)])
def test_exit_code(code: int, expected: int) -> None:
    assert exit_code(code) == expected


def test_settings_from_env(tmp_path: Path) -> None:
    s = LaunchSettings.from_env(
        {
            "DET_MASTER": "http://m:8080",
            "DET_SESSION_TOKEN": "t",
            "DET_TASK_ID": "x",
            "DET_WORKDIR": str(tmp_path),
            "DET_LOG_WAIT_TIME": "nope",
        },
        Path("/"),
    )
    assert s.on_cluster and Path(s.workdir) == tmp_path and s.log_wait_s == 30.0
    assert s.has_context  # Determined's launcher always asks for the context directory
    off = LaunchSettings.from_env({"DET_MASTER": "http://m:8080"}, tmp_path)
    assert not off.on_cluster and Path(off.workdir) == tmp_path
    bare = LaunchSettings.from_env({"RESOLUTE_NO_CONTEXT": "1"}, tmp_path)
    assert not bare.has_context


def _launch(*argv: str, **popen: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.exec.launch", *argv],
        env=launcher_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,  # type: ignore[call-overload]
    )


class TestOffCluster:
    def test_exit_code_and_output_pass_through(self, tmp_path: Path) -> None:
        proc = _launch(sys.executable, "-c", "print('hi'); raise SystemExit(3)", cwd=tmp_path)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 3 and out == b"hi\n"

    def test_no_command_is_a_usage_error(self) -> None:
        proc = _launch()
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 2 and b"usage" in err

    def test_sigterm_reaches_the_child(self, tmp_path: Path) -> None:
        child = (
            "import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *_: (print('got TERM', flush=True),"
            " sys.exit(7)))\n"
            "print('ready', flush=True)\n"
            "time.sleep(30)\n"
        )
        proc = _launch(sys.executable, "-c", child, cwd=tmp_path)
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 7 and out == b"got TERM\n"

    def test_a_child_killed_by_a_signal_exits_128_plus_n(self, tmp_path: Path) -> None:
        proc = _launch(
            sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
        )
        proc.communicate(timeout=30)
        assert proc.returncode == 137

    def test_a_missing_command_fails(self, tmp_path: Path) -> None:
        proc = _launch("/no/such/program", cwd=tmp_path)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 127 and b"could not start" in err


def _on_cluster_env(**extra: str) -> dict[str, str]:
    """A task's variables with a master nobody answers for (port 1): nothing can be shipped."""
    task = {
        "DET_MASTER": "http://127.0.0.1:1",
        "DET_SESSION_TOKEN": "token",
        "DET_TASK_ID": "task",
        "RESOLUTE_NO_CONTEXT": "1",
        "DET_LOG_WAIT_TIME": "0",
    }
    return launcher_env(**{**task, **extra})


class TestOnCluster:
    def test_a_silent_command_costs_no_shipper_and_no_subprocess_module(
        self, tmp_path: Path
    ) -> None:
        """Every task pays for the launcher's start-up: one that prints nothing must not load
        the shipper, threads or subprocess (each a sizeable share of that start-up)."""
        show = (
            "import sys\n"
            "from harness.exec import launch\n"
            "code = launch.main(['true'])\n"
            "print(code, ' '.join(sorted(sys.modules)))\n"
        )
        proc = subprocess.run(
            [sys.executable, "-S", "-c", show],
            env=_on_cluster_env(DET_WORKDIR=str(tmp_path)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        code, _, loaded = proc.stdout.strip().partition(" ")
        assert code == "0", proc.stderr
        heavy = {"subprocess", "threading", "harness.exec.ship_logs", "http.client", "re"}
        assert heavy.isdisjoint(loaded.split())

    def test_output_is_echoed_on_its_own_stream_with_the_exit_code(self, tmp_path: Path) -> None:
        child = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(4)"
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.exec.launch", sys.executable, "-c", child],
            env=_on_cluster_env(DET_WORKDIR=str(tmp_path)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 4
        assert out == b"out\n" and err.startswith(b"err\n")

    def test_a_grandchild_holding_the_pipes_does_not_hold_up_the_exit(self, tmp_path: Path) -> None:
        child = (
            "import subprocess, sys\n"
            "subprocess.Popen(['sleep', '120'])\n"  # inherits stdout and stderr
            "print('started', flush=True)\n"
            "sys.exit(5)\n"
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.exec.launch", sys.executable, "-c", child],
            env=_on_cluster_env(DET_WORKDIR=str(tmp_path), DET_LOG_WAIT_TIME="1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"started\n"
            assert proc.wait(timeout=60) == 5  # the sleep would hold its pipes for 120 s
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()

    def test_sigterm_reaches_the_child(self, tmp_path: Path) -> None:
        child = (
            "import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *_: (print('got TERM', flush=True),"
            " sys.exit(7)))\n"
            "print('ready', flush=True)\n"
            "time.sleep(30)\n"
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.exec.launch", sys.executable, "-c", child],
            env=_on_cluster_env(DET_WORKDIR=str(tmp_path)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 7 and out == b"got TERM\n"

    def test_a_missing_command_fails_with_127(self, tmp_path: Path) -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "harness.exec.launch", "/no/such/program"],
            env=_on_cluster_env(DET_WORKDIR=str(tmp_path)),
            capture_output=True,
            timeout=60,
        )
        assert proc.returncode == 127 and b"could not start" in proc.stderr


class TestStartupHook:
    """`startup-hook.sh` in the working directory (the context directory's top level) is
    sourced before the command, as Determined's task entrypoints do (issue 39, finding 7)."""

    def _run(self, workdir: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "harness.exec.launch", *argv],
            env=_on_cluster_env(DET_WORKDIR=str(workdir)),
            capture_output=True,
            timeout=60,
        )

    def test_what_the_hook_exports_reaches_the_command(self, tmp_path: Path) -> None:
        (tmp_path / "startup-hook.sh").write_text(
            'echo "hook in $(pwd)"\nexport GREETING="from the hook"\nHIDDEN=1\n'
        )
        child = "import os; print(os.environ['GREETING'], os.environ.get('HIDDEN'))"
        ran = self._run(tmp_path, sys.executable, "-c", child)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == f"hook in {tmp_path}\nfrom the hook None\n".encode()

    def test_the_commands_arguments_pass_unchanged(self, tmp_path: Path) -> None:
        (tmp_path / "startup-hook.sh").write_text("set -- clobbered\n")
        args = ["a b", "$HOME", "'q'", "", "*"]
        ran = self._run(tmp_path, sys.executable, "-c", "import sys; print(sys.argv[1:])", *args)
        assert ran.returncode == 0 and ran.stdout == f"{args}\n".encode(), ran.stderr

    def test_a_failing_hook_fails_the_task_before_its_command(self, tmp_path: Path) -> None:
        (tmp_path / "startup-hook.sh").write_text("echo before\nfalse\necho after\n")
        ran = self._run(tmp_path, sys.executable, "-c", "print('the command ran')")
        assert ran.returncode == 1 and ran.stdout == b"before\n"

    def test_the_commands_exit_code_and_signals_are_its_own(self, tmp_path: Path) -> None:
        (tmp_path / "startup-hook.sh").write_text("true\n")
        ran = self._run(tmp_path, sys.executable, "-c", "import os; os.kill(os.getpid(), 15)")
        assert ran.returncode == 143  # the shell exec'd the command: no shell in between

    def test_without_a_hook_the_command_runs_as_given(self, tmp_path: Path) -> None:
        from harness.exec.launch import with_startup_hook

        assert with_startup_hook(["python3", "x.py"], str(tmp_path)) == ["python3", "x.py"]
        (tmp_path / "startup-hook.sh").mkdir()  # not a file: not a hook
        assert with_startup_hook(["python3", "x.py"], str(tmp_path)) == ["python3", "x.py"]
