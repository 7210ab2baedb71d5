"""The task library (``pylib``) as the agent builds it, and Pythons to run tasks' code with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.run_dir import harness_source, shared_pylib

REPO = Path(__file__).resolve().parents[3]
DET_PYTHON = REPO / ".venv-det" / "bin" / "python"


def det_python() -> Path:
    """The real determined==0.38.1's interpreter; a visible skip without it (a failure in CI)."""
    if not DET_PYTHON.exists():
        reason = "the determined==0.38.1 venv (.venv-det) is missing (scripts/setup.sh makes it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return DET_PYTHON


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without DET_* and PYTHONPATH, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_") and k != "PYTHONPATH"}
    env.update(extra)
    return env


def run_python(
    python: Path | str,
    code: str,
    env: dict[str, str],
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )


@pytest.fixture(scope="session")
def pylib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_pylib(tmp_path_factory.mktemp("agent-work"), harness_source())


@pytest.fixture
def our_python() -> str:
    """A Python without a determined package of its own (this venv's)."""
    return sys.executable
