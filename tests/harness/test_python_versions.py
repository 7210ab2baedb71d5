"""The harness runs inside user images: it must work on the Pythons they ship (3.8 and later)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness.test_launch import launcher_env

PYENV = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
CHILD = """
import tempfile
import harness as det
with det.core.init(checkpoint_storage=tempfile.mkdtemp()) as ctx:
    ctx.train.report_training_metrics(1, {"loss": 0.5})
    with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, storage_id):
        (path / "w").write_text("w")
    with ctx.checkpoint.restore_path(storage_id) as path:
        print("restored", (path / "w").read_text())
"""


def find_python(minor: int) -> str | None:
    """A working python3.<minor>: on PATH, or installed by pyenv (its shims may be inactive)."""
    candidates = [shutil.which(f"python3.{minor}")]
    candidates += sorted(str(p) for p in PYENV.glob(f"versions/3.{minor}.*/bin/python3"))
    for python in filter(None, candidates):
        probe = subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return python
    return None


@pytest.mark.parametrize("minor", range(8, 14))
def test_launcher_and_core_on_python_3_x(minor: int, tmp_path: Path) -> None:
    python = find_python(minor)
    if python is None:
        pytest.skip(f"no python3.{minor} on this machine")
    proc = subprocess.run(
        [python, "-m", "harness.exec.launch", python, "-c", CHILD],
        env=launcher_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "training metrics at step 1" in proc.stdout and "restored w" in proc.stdout


DETERMINED_CHILD = """
import sys, tempfile
import determined as det
from determined import core
from determined.experimental import client
from determined.common import util
assert det.__file__.startswith(sys.argv[1]), det.__file__
with core.init(checkpoint_storage=tempfile.mkdtemp()) as ctx:
    ctx.train.report_metrics(util._INFERENCE, 1, {"loss": 0.5})
print("determined ok", det.LOG_FORMAT, client.ExperimentState.COMPLETED.value)
"""


@pytest.mark.parametrize("minor", range(8, 14))
def test_determined_names_on_python_3_x(minor: int, tmp_path: Path) -> None:
    """Our ``determined`` (through pylib's sitecustomize) on every Python a task may have."""
    from agent.run_dir import harness_source, shared_pylib

    python = find_python(minor)
    if python is None:
        pytest.skip(f"no python3.{minor} on this machine")
    pylib = shared_pylib(tmp_path / "work", harness_source())
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env.update(PYTHONPATH=str(pylib), XDG_DATA_HOME=str(tmp_path / "data"))
    proc = subprocess.run(
        [python, "-c", DETERMINED_CHILD, str(pylib)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "determined ok %(levelname)s" in proc.stdout and "STATE_COMPLETED" in proc.stdout
