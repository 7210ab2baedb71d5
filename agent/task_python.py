"""Which Python a task runs, where that choice comes from, and what it means on this machine.

Three places may name the task's Python; the first one that does wins (docs/runtimes.md):

1. ``experiment``: the experiment's or command's ``environment.python`` (``TaskSpec.python``);
2. ``pool``: the pool's ``task_container_defaults.python`` in the master config, the pool's own
   block over the top-level one (``MasterSetAgentOptions.task_python``);
3. ``agent``: the agent's ``task_python`` setting; process runtime only. Without it the agent
   uses a task virtualenv of its own, ``<work_dir>/task-venv`` (agent/task_venv.py).

When none names one the runtime's own default applies: ``python3`` on the image's PATH (docker).

A value is an absolute path to an interpreter, an absolute path to a virtualenv (any prefix with
``bin/python3`` or ``bin/python``), or a command name without ``/`` (``python3.12``) looked up on
the agent's PATH with the agent's own virtualenv left out. ``choose`` and ``value_problem`` are
pure; ``resolve`` looks at the file system.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SOURCES = ("experiment", "pool", "agent")
INTERPRETER_NAMES = ("python3", "python")


class BadTaskPython(ValueError):
    """The value names no Python this agent can run; the message says why, in the user's terms."""


@dataclass(frozen=True)
class Choice:
    """The value that applies and the tier it came from ("" when no tier names one)."""

    value: str
    source: str


def choose(experiment: str | None, pool: str | None, agent: str | None) -> Choice:
    """The experiment's value, else the pool's, else the agent's; blank values count as unset."""
    for source, value in zip(SOURCES, (experiment, pool, agent), strict=True):
        if value and value.strip():
            return Choice(value=value.strip(), source=source)
    return Choice(value="", source="")


def value_problem(value: object) -> str | None:
    """Why ``value`` cannot name a task's Python (None when it can); no file system access."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value.strip():
        return "must not be empty"
    if any(c in value for c in "\0\n\r"):
        return "must be one line without NUL characters"
    if "/" in value and not value.startswith("/"):
        return (
            f"{value!r} is a relative path; give an absolute path (it is read on the agent's "
            "machine) or a command name without '/', such as python3.12"
        )
    return None


@dataclass(frozen=True)
class TaskPython:
    """A resolved task Python: what runs, what goes first on PATH, and its virtualenv if any."""

    interpreter: str
    bin_dir: str
    venv: str | None = None


def agent_bin_dirs() -> tuple[str, ...]:
    """The folders of the agent's own virtualenv that hold programs (none outside a venv): they
    must not come before anything else on a task's PATH, or `pip` would install into the agent's
    environment."""
    if sys.prefix == sys.base_prefix:
        return ()
    found = dict.fromkeys([str(Path(sys.prefix) / "bin"), str(Path(sys.executable).parent)])
    return tuple(found)


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _venv_of(interpreter: Path) -> str | None:
    prefix = interpreter.parent.parent
    return str(prefix) if (prefix / "pyvenv.cfg").is_file() else None


def resolve(value: str, *, search_path: str, hidden: Sequence[str] = ()) -> TaskPython:
    """The interpreter ``value`` names on this machine; raises BadTaskPython.

    Paths are taken as written (a virtualenv's ``bin/python3`` is usually a symlink; resolving it
    would leave the virtualenv). Command names are looked up on ``search_path`` without the
    folders in ``hidden`` (the agent's own virtualenv).
    """
    problem = value_problem(value)
    if problem:
        raise BadTaskPython(problem)
    value = value.strip()
    if "/" not in value:
        folders = [p for p in search_path.split(os.pathsep) if p and p not in hidden]
        found = shutil.which(value, path=os.pathsep.join(folders))
        if found is None:
            raise BadTaskPython(f"{value!r} is not found on the agent's PATH")
        interpreter = Path(os.path.abspath(found))
        return TaskPython(str(interpreter), str(interpreter.parent), _venv_of(interpreter))
    path = Path(os.path.normpath(value))
    if path.is_dir():
        for name in INTERPRETER_NAMES:
            candidate = path / "bin" / name
            if _executable(candidate):
                venv = str(path) if (path / "pyvenv.cfg").is_file() else None
                return TaskPython(str(candidate), str(candidate.parent), venv)
        raise BadTaskPython(f"{value} is a directory without bin/python3 or bin/python")
    if not path.exists():
        raise BadTaskPython(f"{value}: no such file or directory on the agent's machine")
    if not _executable(path):
        raise BadTaskPython(f"{value} is not an executable file")
    return TaskPython(str(path), str(path.parent), _venv_of(path))


def task_path(inherited: str, python: TaskPython, hidden: Sequence[str] = ()) -> str:
    """PATH for the task: the Python's folder first, then the agent's PATH without that folder
    and without the agent's own virtualenv."""
    rest = [p for p in inherited.split(os.pathsep) if p and p != python.bin_dir and p not in hidden]
    return os.pathsep.join([python.bin_dir, *rest])
