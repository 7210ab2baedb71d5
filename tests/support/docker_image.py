"""The docker image tests run tasks in, and the mounts that make the host's Python work inside it.

``scripts/build-test-image.sh`` builds ``resolute-test-python:<tag of this interpreter>`` without
a registry: a busybox root filesystem with no Python of its own. A task runs the host's
interpreter (this test run's venv, torch included) as ``python3``, mounted read-only at the same
paths as on the host, which is what ``TestImage.mounts`` lists: pass them as
``RunRequest.mounts`` (or a TaskSpec's mounts) next to the task's own.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import Mount

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class TestImage:
    __test__ = False  # not a test class, whatever its name

    name: str
    mounts: tuple[Mount, ...]


def host_python_mounts() -> tuple[Mount, ...]:
    """The interpreter prefix, the venv, and the host libraries the interpreter links against."""
    paths = [sys.base_prefix, sys.prefix, "/usr/lib", "/usr/lib64"]
    unique = [p for i, p in enumerate(paths) if p not in paths[:i] and Path(p).is_dir()]
    return tuple(Mount(host_path=p, container_path=p, read_only=True) for p in unique)


@functools.cache
def ensure_test_image() -> TestImage:
    """Builds the image for this interpreter if it is missing or stale (about 0.2 s), once."""
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-test-image.sh"), sys.executable],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"scripts/build-test-image.sh failed: {result.stderr.strip()}")
    lines = result.stdout.split()
    if not lines or not lines[-1].startswith("resolute-test-python:"):
        raise RuntimeError(f"scripts/build-test-image.sh named no image: {result.stdout!r}")
    return TestImage(name=lines[-1], mounts=host_python_mounts())
