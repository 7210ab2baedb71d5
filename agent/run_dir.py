"""A task's run directory on the agent: `<work_dir>/runs/<container id>/`.

It holds the files the master sent (`files`) and the task's working directory `workdir/`.
Docker mounts it at /run/determined; the process runtime uses it in place. A task that runs as
its owner's Unix user (agent/task_user.py) owns its run dir, mode 0700, with a `home/` for HOME.

The harness reaches tasks through one shared library folder per agent and harness version,
`<work_dir>/pylib/<digest>/harness`, copied and byte-compiled once (not per task: a trivial
task would otherwise pay for the copy and for compiling the launcher every time). The runtime
puts it first on PYTHONPATH (docker mounts it read-only at /run/determined/pylib), so any image
with a Python 3 runs our launcher and Core API without installing anything.

Next to `harness/`, pylib holds `sitecustomize.py` (the harness's `_sitecustomize.py`), which
Python runs at every start-up: it chains to the interpreter's own sitecustomize, appends
`harness/_compat` (our `determined` package) to the end of sys.path so that a real determined
installed in the image wins, and lets a real determined find the run dir's info files on the
process runtime.
"""

from __future__ import annotations

import compileall
import hashlib
import importlib.util
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath

HARNESS_PACKAGE = "harness"
PYLIB = "pylib"
HOME = "home"
SITECUSTOMIZE = "sitecustomize.py"
SITECUSTOMIZE_SOURCE = "_sitecustomize.py"  # in the harness package
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


def _digest(harness: Path) -> str:
    """Names the harness version by its sources (paths, sizes, mtimes): cheap, and a new wheel
    or an edited checkout gets a folder of its own."""
    h = hashlib.sha256()
    for path in sorted(harness.rglob("*.py")):
        stat = path.stat()
        h.update(f"{path.relative_to(harness)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def shared_pylib(work_dir: Path, harness: Path) -> Path:
    """The folder to put on tasks' PYTHONPATH, holding `harness/` and `sitecustomize.py`; made
    once per version.

    Built in a temporary folder and renamed into place, so agents sharing a work dir never see a
    half-copied one; the files are left read-only for the tasks that import them.
    """
    try:
        target = work_dir / PYLIB / _digest(harness)
        if (target / HARNESS_PACKAGE / "__init__.py").exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
        shutil.copytree(harness, staging / HARNESS_PACKAGE, ignore=_SKIP)
        shutil.copyfile(harness / SITECUSTOMIZE_SOURCE, staging / SITECUSTOMIZE)
        compileall.compile_dir(staging / HARNESS_PACKAGE, quiet=1, workers=1)
        compileall.compile_file(staging / SITECUSTOMIZE, quiet=1)
        # Readable by every task user (the agent's umask may be stricter).
        for path in staging.rglob("*"):
            path.chmod(0o444 if path.is_file() else 0o755)
        staging.chmod(0o755)
        try:
            os.rename(staging, target)
        except OSError:  # another agent got there first: theirs is as good as ours
            shutil.rmtree(staging, ignore_errors=True)
            if not (target / HARNESS_PACKAGE / "__init__.py").exists():
                raise
        return target
    except OSError as exc:
        raise RunDirError(f"cannot prepare the harness library under {work_dir}: {exc}") from exc


def prepare_run_dir(run_dir: Path, files: Mapping[str, str]) -> None:
    """Create the run dir from scratch (a stale one from an earlier try is replaced)."""
    targets = [(safe_relative(name), text) for name, text in files.items()]
    try:
        if run_dir.exists():
            shutil.rmtree(run_dir)
        (run_dir / WORKDIR).mkdir(parents=True)
        for relative, text in targets:
            target = run_dir.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    except OSError as exc:
        raise RunDirError(f"cannot prepare run directory {run_dir}: {exc}") from exc


def give_run_dir(run_dir: Path, uid: int, gid: int) -> Path:
    """Make the run dir the task user's alone (mode 0700, everything in it theirs), with an
    empty ``home/`` for HOME; answers that folder. Another task user cannot read the files the
    master sent (``info/*.json``) nor what the task writes; root (the agent) still can."""
    home = run_dir / HOME
    try:
        (run_dir / WORKDIR).mkdir(parents=True, exist_ok=True)
        home.mkdir(mode=0o700, exist_ok=True)
        for folder, dirs, files in os.walk(run_dir):
            for name in (*dirs, *files):
                os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)
        os.chown(run_dir, uid, gid)
        run_dir.chmod(0o700)
    except OSError as exc:
        raise RunDirError(
            f"cannot give run directory {run_dir} to uid {uid}, gid {gid}: {exc}"
        ) from exc
    return home


class SharedPylibs:
    """`shared_pylib` for a running agent, which asks at every task start: the harness's
    digest (a stat of each of its sources, about a millisecond of CPU) is taken again at most
    every ``recheck_s``, so an edited checkout is picked up within that, not on every task."""

    def __init__(
        self,
        work_dir: Path,
        harness: Callable[[], Path],
        *,
        recheck_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.work_dir = work_dir
        self.harness = harness
        self.recheck_s = recheck_s
        self.clock = clock
        self._lock = threading.Lock()  # task starts prepare their run dirs on worker threads
        self._last: tuple[float, Path] | None = None

    def __call__(self) -> Path:
        now = self.clock()
        with self._lock:
            last = self._last
        if last is not None:
            at, known = last
            # Checked still there (one stat): someone may have removed the work dir's pylib.
            if now - at < self.recheck_s and (known / HARNESS_PACKAGE / "__init__.py").exists():
                return known
        path = shared_pylib(self.work_dir, self.harness())
        with self._lock:
            self._last = (now, path)
        return path


def blocked_for_others(path: Path) -> list[str]:
    """The folders above ``path`` that other users cannot pass through (no o+x), described."""
    blocked = []
    for folder in reversed(Path(os.path.abspath(path)).parents):
        try:
            mode = folder.stat().st_mode
        except OSError:
            continue
        if not mode & 0o001:
            blocked.append(f"{folder} (mode {mode & 0o7777:o})")
    return blocked


def open_to_task_users(work_dir: Path) -> list[str]:
    """Let task users reach what they need under ``work_dir`` (search permission on it and on
    ``pylib/``; ``runs/`` 0711), which the agent owns; answers, for the start-up log, each
    folder above it that they cannot pass through (a 0700 home or temporary folder)."""
    for folder in (work_dir, work_dir / PYLIB):
        folder.mkdir(parents=True, exist_ok=True)
        mode = folder.stat().st_mode
        if mode & 0o011 != 0o011:
            folder.chmod((mode & 0o7777) | 0o011)
    runs = work_dir / "runs"
    runs.mkdir(exist_ok=True)
    runs.chmod(0o711)  # passable, not listable: a task finds its own run dir only
    return blocked_for_others(work_dir)


def remove_run_dir(run_dir: Path) -> None:
    """Best effort: files a container wrote as another user may stay behind."""
    shutil.rmtree(run_dir, ignore_errors=True)
