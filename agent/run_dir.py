"""A task's run directory on the agent: `<work_dir>/runs/<container id>/`.

It holds the files the master sent (`files`), a copy of the installed harness package under
`pylib/harness` (the runtime puts `pylib` first on PYTHONPATH, so any image with a Python 3 runs
our launcher and Core API without installing anything) and the task's working directory
`workdir/`. Docker mounts it at /run/determined; the process runtime uses it in place.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

HARNESS_PACKAGE = "harness"
PYLIB = "pylib"
WORKDIR = "workdir"
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")


class RunDirError(Exception):
    """The run directory could not be prepared; the message says why."""


def harness_source() -> Path:
    """Where the installed harness package lives, found without importing it.

    The agent must not import the harness (they are separate programs sharing a wheel); the
    import system's finder tells where the package is.
    """
    spec = importlib.util.find_spec(HARNESS_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise RunDirError("the harness package is not installed next to the agent")
    return Path(locations[0])


def safe_relative(name: str) -> PurePosixPath:
    """A file path the master may write in the run dir: relative, no '..', not into pylib."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or path.parts[0] == PYLIB:
        raise RunDirError(f"refusing to write {name!r} in the run directory")
    return path


def run_dir_of(work_dir: Path, container_id: str) -> Path:
    return work_dir / "runs" / container_id


def prepare_run_dir(run_dir: Path, files: Mapping[str, str], harness: Path) -> None:
    """Create the run dir from scratch (a stale one from an earlier try is replaced)."""
    targets = [(safe_relative(name), text) for name, text in files.items()]
    try:
        if run_dir.exists():
            shutil.rmtree(run_dir)
        (run_dir / WORKDIR).mkdir(parents=True)
        shutil.copytree(harness, run_dir / PYLIB / HARNESS_PACKAGE, ignore=_SKIP)
        for relative, text in targets:
            target = run_dir.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    except OSError as exc:
        raise RunDirError(f"cannot prepare run directory {run_dir}: {exc}") from exc


def remove_run_dir(run_dir: Path) -> None:
    """Best effort: files a container wrote as another user may stay behind."""
    shutil.rmtree(run_dir, ignore_errors=True)
