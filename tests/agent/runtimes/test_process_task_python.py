"""The process runtime runs tasks in the task's Python, and `pip install` inside a task changes
that environment only: never the environment the agent runs in.

The agent's environment here is a stand-in, ``agent-venv``, holding one package of its own
(``tinypkg`` 1.0) over this project's packages, so nothing a failing test does can reach the
project's own .venv; the project's site-packages are watched as well. Wheels are built here,
and pip runs with ``--no-index``: nothing is downloaded.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import sysconfig
import uuid
import zipfile
from pathlib import Path

import pytest

from agent.runtimes.base import RunRequest
from agent.runtimes.process import ProcessRuntime
from agent.task_venv import TaskVenv, ensure_task_venv, site_packages

VERSION = sys.version_info[:3]
QUIET_PIP = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_NO_INDEX": "1"}


def build_wheel(folder: Path, name: str, version: str) -> Path:
    """A pure-Python wheel of module ``name`` whose VERSION is ``version``."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for arcname, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{arcname},sha256={digest.decode()},{len(data)}")
            wheel.writestr(arcname, data)
        record.append(f"{info}/RECORD,,")
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def tree_state(root: Path, *, hashes: bool) -> dict[str, tuple[int, ...] | str]:
    """Every file under root (bytecode caches aside: importing may write those) with its size
    and mtime, or its content hash."""
    state: dict[str, tuple[int, ...] | str] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            if hashes:
                state[key] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                st = path.lstat()
                state[key] = (st.st_size, st.st_mtime_ns)
    return state


@pytest.fixture(scope="module")
def layers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The stand-in agent environment (with tinypkg 1.0), and wheels to install in tasks."""
    root = tmp_path_factory.mktemp("layers")
    wheels = root / "wheels"
    wheels.mkdir()
    agent_venv = ensure_task_venv(root / "agent-venv")
    old = build_wheel(wheels, "tinypkg", "1.0")
    done = subprocess.run(
        [str(agent_venv.interpreter), "-m", "pip", "install", "--no-deps", str(old)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **QUIET_PIP},
        cwd=root,
    )
    assert done.returncode == 0, done.stderr
    return {
        "root": root,
        "agent_venv": agent_venv,
        "new": build_wheel(wheels, "tinypkg", "2.0"),
        "other": build_wheel(wheels, "otherpkg", "0.1"),
    }


async def run_task(runtime: ProcessRuntime, tmp_path: Path, *argv: str) -> str:
    container_id = f"p{uuid.uuid4().hex[:10]}-0"
    request = RunRequest(
        container_id=container_id,
        agent_id="a1",
        argv=argv,
        run_dir=tmp_path / "runs" / container_id,
        environment=QUIET_PIP,
    )
    await runtime.start(request)
    code = await runtime.wait(container_id)
    out = b"".join([c async for _, c in runtime.logs(container_id)]).decode()
    await runtime.remove(container_id)
    assert code == 0, out
    return out


async def test_python3_is_the_configured_venv_and_pip_changes_only_it(
    layers: dict[str, object], tmp_path: Path
) -> None:
    agent_venv = layers["agent_venv"]
    assert isinstance(agent_venv, TaskVenv)
    agent_site = site_packages(agent_venv.path, VERSION)
    project_site = Path(sysconfig.get_path("purelib"))
    task_venv = ensure_task_venv(tmp_path / "task-venv", base=str(agent_venv.interpreter))
    assert str(agent_site) in task_venv.layer
    agent_before = tree_state(agent_site, hashes=True)
    project_before = tree_state(project_site, hashes=False)
    runtime = ProcessRuntime(tmp_path / "state", python=str(task_venv.path))
    try:
        code = "import sys, tinypkg; print(sys.prefix); print(tinypkg.VERSION)"
        out = await run_task(runtime, tmp_path, "python3", "-c", code)
        assert out.split() == [str(task_venv.path), "1.0"], "the agent's copy, seen read-only"

        # `pip` is the task venv's, found on PATH; upgrading what the agent has, and adding.
        out = await run_task(runtime, tmp_path, "pip", "install", str(layers["new"]))
        assert "Not uninstalling tinypkg" in out and "outside environment" in out
        await run_task(runtime, tmp_path, "pip", "install", "--no-deps", str(layers["other"]))
        code = "import tinypkg, otherpkg; print(tinypkg.VERSION, tinypkg.__file__)"
        version, where = (await run_task(runtime, tmp_path, "python3", "-c", code)).split()
        assert version == "2.0" and where.startswith(str(task_venv.path) + "/")

        # Uninstalling twice removes the task's copy, then refuses to touch the agent's.
        await run_task(runtime, tmp_path, "python3", "-m", "pip", "uninstall", "-y", "tinypkg")
        out = await run_task(runtime, tmp_path, "pip", "uninstall", "-y", "tinypkg")
        assert "Not uninstalling tinypkg" in out
    finally:
        await runtime.close()
    assert tree_state(agent_site, hashes=True) == agent_before
    assert tree_state(project_site, hashes=False) == project_before
    own = site_packages(task_venv.path, VERSION)
    assert (own / "otherpkg" / "__init__.py").exists()
    assert not (own / "tinypkg").exists()
