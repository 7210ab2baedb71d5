"""A task virtualenv layered over an existing Python environment: made once, then reused.

Tasks on the process runtime must not run in the agent's own environment, and a ``pip install``
inside a task must not be able to change it; yet they should find what that environment has
(torch above all) without downloading it again. ``ensure_task_venv(target, base)`` makes:

- ``python -m venv --without-pip target``, run by the base interpreter (so the same Python
  version as the packages it exposes);
- ``_resolute_layer.pth`` in the venv's site-packages, naming the base's site-packages folders.
  A ``.pth`` file appends its folders to ``sys.path``, so they come *after* the venv's own:
  what a task installs shadows the base's copy. The base's own ``.pth`` files are not run, so
  an editable install of Resolute (controlplane, agent, cli) stays invisible to tasks;
- ``bin/pip``, ``bin/pip3`` and ``bin/pip3.X``, which run ``python -m pip`` with the venv's
  interpreter when the base has pip (pip then installs into the venv: it takes the target from
  the running interpreter, and refuses to uninstall what lies outside that environment, so an
  upgrade of a package the base has lands in the venv next to it). Without pip in the base,
  ``ensurepip`` installs one into the venv;
- ``resolute-task-venv.json``, which marks the folder as ours and records the layer.

Everything in it is left readable by all (executables executable by all): tasks run as their
owners' Unix users, who read it but cannot change it (a ``pip install`` in a task then fails on
the shared venv; tasks install into a folder of their own, e.g. ``pip install --target``).

A later call with the same base only rewrites the layer when it changed (in milliseconds); a
venv of another Python version is made again. A folder that exists without the marker is never
touched. ``python -m agent.task_venv TARGET [--base PYTHON]`` does the same from the shell (``det
deploy local up`` uses it) and prints the venv's interpreter.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MARKER = "resolute-task-venv.json"
LAYER_FILE = "_resolute_layer.pth"
SITE_DIR_NAMES = ("site-packages", "dist-packages")
CREATE_TIMEOUT_S = 300.0
# Run by the base interpreter: its version and the site-packages folders on its sys.path (its
# own, and those its .pth files add, such as another layer's), without the user's site.
_PROBE = """\
import json, os, site, sys
user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
dirs = [p for p in sys.path if os.path.basename(p.rstrip("/")) in {names!r}
        and p != user and os.path.isdir(p)]
print(json.dumps({{"version": list(sys.version_info[:3]), "dirs": dirs}}))
"""


class TaskVenvError(RuntimeError):
    """The task venv could not be made; the message says why."""


@dataclass(frozen=True)
class TaskVenv:
    path: Path
    interpreter: Path
    layer: tuple[str, ...]
    created: bool


@dataclass(frozen=True)
class _Base:
    version: tuple[int, int, int]
    dirs: tuple[str, ...]


def _run(argv: Sequence[str], what: str) -> str:
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=CREATE_TIMEOUT_S,
            check=False,
            env=_clean_env(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TaskVenvError(f"{what}: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-2000:]
        raise TaskVenvError(f"{what} failed (exit {done.returncode}): {tail}")
    return done.stdout


def _clean_env() -> dict[str, str]:
    """Our environment without what would point the interpreters elsewhere."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "VIRTUAL_ENV", "PIP_TARGET")
    return {k: v for k, v in os.environ.items() if k not in dropped}


def probe_base(base: str) -> _Base:
    """The base interpreter's version and site-packages folders."""
    out = _run([base, "-c", _PROBE.format(names=SITE_DIR_NAMES)], f"asking {base} for its paths")
    try:
        data = json.loads(out)
        version = tuple(int(v) for v in data["version"])
        return _Base(version=(version[0], version[1], version[2]), dirs=tuple(data["dirs"]))
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise TaskVenvError(f"{base} answered {out!r}: {exc}") from None


def site_packages(venv: Path, version: tuple[int, ...]) -> Path:
    return venv / "lib" / f"python{version[0]}.{version[1]}" / "site-packages"


def layer_text(dirs: Sequence[str]) -> str:
    """The .pth file: one folder per line (plain lines are appended to sys.path, never run)."""
    return "".join(f"{d}\n" for d in dirs)


def pip_wrapper(interpreter: Path) -> str:
    quoted = str(interpreter).replace("'", "'\\''")
    return f"#!/bin/sh\nexec '{quoted}' -m pip \"$@\"\n"


def _has_pip(dirs: Sequence[str]) -> bool:
    return any((Path(d) / "pip" / "__init__.py").is_file() for d in dirs)


def _read_marker(target: Path) -> dict[str, object] | None:
    try:
        data = json.loads((target / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[None]:
    """One maker at a time per target, across processes (agents sharing a venv) and threads."""
    lock = target.parent / f".{target.name}.lock"
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_task_venv(target: Path, base: str = sys.executable) -> TaskVenv:
    """The task venv at ``target`` layered over ``base``'s packages, made if needed; raises
    TaskVenvError."""
    target = Path(os.path.abspath(target))
    if Path(os.path.abspath(base)).is_relative_to(target):
        raise TaskVenvError(f"the base interpreter {base} lies inside {target}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TaskVenvError(f"cannot create {target.parent}: {exc.strerror or exc}") from None
    with _locked(target):
        return _ensure(target, base)


def _ensure(target: Path, base: str) -> TaskVenv:
    info = probe_base(base)
    marker = _read_marker(target)
    if target.exists() and marker is None and any(target.iterdir()):
        raise TaskVenvError(
            f"{target} exists and is not a task venv made by Resolute; remove it or choose "
            "another folder"
        )
    layer = tuple(d for d in info.dirs if not Path(d).is_relative_to(target))
    interpreter = target / "bin" / "python"
    version = list(info.version)
    fresh = marker is None or marker.get("version") != version or not interpreter.exists()
    if fresh:
        argv = [base, "-m", "venv", "--without-pip"]
        argv += ["--clear"] if marker is not None else []
        _run([*argv, str(target)], f"creating the task venv {target}")
    elif marker is not None and marker.get("layer") == list(layer):
        return TaskVenv(target, interpreter, layer, created=False)
    site = site_packages(target, info.version)
    site.mkdir(parents=True, exist_ok=True)
    _write(site / LAYER_FILE, layer_text(layer))
    if fresh:
        _add_pip(target, interpreter, layer, info.version)
    record = {"made_by": "resolute", "base": base, "version": version, "layer": list(layer)}
    _write(target / MARKER, json.dumps(record, indent=2) + "\n")
    _open_to_all(target)
    return TaskVenv(target, interpreter, layer, created=fresh)


def _open_to_all(target: Path) -> None:
    """Readable (and, where executable, executable) by every task user, whatever the maker's
    umask: tasks run as their owners' users (agent/task_user.py). Only the agent writes it."""
    for folder, dirs, files in os.walk(target):
        for name in (*dirs, *files, None):
            path = folder if name is None else os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                continue
            wanted = mode | 0o044 | (0o011 if stat.S_ISDIR(mode) or mode & 0o100 else 0)
            if wanted != mode:
                os.chmod(path, stat.S_IMODE(wanted))


def _add_pip(target: Path, interpreter: Path, layer: Sequence[str], version: Sequence[int]):
    if not _has_pip(layer):
        _run([str(interpreter), "-m", "ensurepip", "--default-pip"], "installing pip")
        return
    script = pip_wrapper(interpreter)
    for name in ("pip", "pip3", f"pip{version[0]}.{version[1]}"):
        path = target / "bin" / name
        _write(path, script)
        path.chmod(0o755)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent.task_venv",
        description="Make (or reuse) a task virtualenv layered over a Python's packages.",
    )
    parser.add_argument("target", type=Path, help="folder of the task venv")
    parser.add_argument(
        "--base",
        default=sys.executable,
        help="interpreter whose packages the venv exposes (default: this one)",
    )
    args = parser.parse_args(argv)
    try:
        venv = ensure_task_venv(args.target, args.base)
    except TaskVenvError as exc:
        print(f"task venv: {exc}", file=sys.stderr)
        return 1
    print(venv.interpreter)
    return 0


if __name__ == "__main__":
    sys.exit(main())
