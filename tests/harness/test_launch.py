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
    assert s.on_cluster and s.workdir == tmp_path and s.log_wait_s == 30.0
    assert s.has_context  # Determined's launcher always asks for the context directory
    off = LaunchSettings.from_env({"DET_MASTER": "http://m:8080"}, tmp_path)
    assert not off.on_cluster and off.workdir == tmp_path
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
