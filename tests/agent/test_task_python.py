"""agent.task_python: which tier names the task's Python, what a value may look like, what it
resolves to on this machine, and the PATH a task gets from it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agent.task_python import (
    BadTaskPython,
    Choice,
    TaskPython,
    agent_bin_dirs,
    choose,
    resolve,
    task_path,
    value_problem,
)

E, P, A = "/exp/venv", "/pool/venv", "/agent/venv"


@pytest.mark.parametrize(
    ("experiment", "pool", "agent", "expected"),
    [
        (E, P, A, Choice(E, "experiment")),
        (E, None, None, Choice(E, "experiment")),
        (E, "", A, Choice(E, "experiment")),
        (None, P, A, Choice(P, "pool")),
        ("", P, A, Choice(P, "pool")),
        ("  ", P, None, Choice(P, "pool")),
        (None, None, A, Choice(A, "agent")),
        ("", "", A, Choice(A, "agent")),
        (None, None, None, Choice("", "")),
        ("", "", "", Choice("", "")),
        (" python3.12 ", None, A, Choice("python3.12", "experiment")),
    ],
)
def test_the_experiment_wins_over_the_pool_which_wins_over_the_agent(
    experiment: str | None, pool: str | None, agent: str | None, expected: Choice
) -> None:
    assert choose(experiment, pool, agent) == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("/opt/venv", None),
        ("/opt/venv/bin/python3", None),
        ("python3.12", None),
        ("python3", None),
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("venv/bin/python", "'venv/bin/python' is a relative path"),
        ("./python", "relative path"),
        ("~/venv", "relative path"),
        ("/opt/venv\n/bin", "one line"),
        (3, "must be a string, not int"),
        (None, "must be a string, not NoneType"),
    ],
)
def test_what_a_value_may_look_like(value: object, fragment: str | None) -> None:
    problem = value_problem(value)
    if fragment is None:
        assert problem is None
    else:
        assert problem is not None and fragment in problem


def _interpreter(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


class TestResolve:
    def test_a_venv_folder_runs_its_python3_and_is_the_virtual_env(self, tmp_path: Path) -> None:
        venv = tmp_path / "venv"
        _interpreter(venv / "bin" / "python3")
        _interpreter(venv / "bin" / "python")
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        got = resolve(str(venv), search_path="")
        assert got == TaskPython(str(venv / "bin/python3"), str(venv / "bin"), venv=str(venv))

    def test_a_prefix_with_only_bin_python_is_not_a_venv(self, tmp_path: Path) -> None:
        prefix = tmp_path / "opt"
        _interpreter(prefix / "bin" / "python")
        got = resolve(str(prefix) + "/", search_path="")
        assert got == TaskPython(str(prefix / "bin/python"), str(prefix / "bin"), venv=None)

    def test_an_interpreter_inside_a_venv_names_that_venv(self, tmp_path: Path) -> None:
        venv = tmp_path / "venv"
        python = _interpreter(venv / "bin" / "python3.11")
        (venv / "pyvenv.cfg").write_text("")
        assert resolve(str(python), search_path="").venv == str(venv)

    def test_symlinks_are_kept_as_written(self, tmp_path: Path) -> None:
        real = _interpreter(tmp_path / "base" / "bin" / "python3.11")
        link = tmp_path / "venv" / "bin" / "python3"
        link.parent.mkdir(parents=True)
        link.symlink_to(real)
        got = resolve(str(link), search_path="")
        assert (got.interpreter, got.bin_dir) == (str(link), str(link.parent))

    def test_a_command_name_is_looked_up_without_the_agents_own_folders(
        self, tmp_path: Path
    ) -> None:
        agent_bin = tmp_path / "agent-venv" / "bin"
        system_bin = tmp_path / "usr" / "bin"
        _interpreter(agent_bin / "python3")
        found = _interpreter(system_bin / "python3")
        search = os.pathsep.join([str(agent_bin), str(system_bin)])
        got = resolve("python3", search_path=search, hidden=[str(agent_bin)])
        assert got == TaskPython(str(found), str(system_bin))
        with pytest.raises(BadTaskPython, match="'python3' is not found on the agent's PATH"):
            resolve("python3", search_path=str(agent_bin), hidden=[str(agent_bin)])

    @pytest.mark.parametrize(
        ("make", "value", "message"),
        [
            (None, "missing/bin/python3", "relative path"),
            (None, "/{tmp}/missing/bin/python3", "no such file or directory"),
            ("dir", "/{tmp}/empty", "is a directory without bin/python3 or bin/python"),
            ("plain", "/{tmp}/notes.txt", "is not an executable file"),
            (None, "", "must not be empty"),
        ],
    )
    def test_what_names_no_python_is_refused_with_the_reason(
        self, tmp_path: Path, make: str | None, value: str, message: str
    ) -> None:
        if make == "dir":
            (tmp_path / "empty").mkdir()
        if make == "plain":
            (tmp_path / "notes.txt").write_text("x")
        with pytest.raises(BadTaskPython, match=message):
            resolve(value.replace("/{tmp}", str(tmp_path)), search_path="")


def test_path_leads_with_the_pythons_folder_and_drops_the_agents_venv() -> None:
    python = TaskPython("/task/bin/python3", "/task/bin", "/task")
    inherited = os.pathsep.join(["/agent/bin", "/usr/bin", "", "/task/bin", "/bin"])
    assert task_path(inherited, python, ["/agent/bin"]) == "/task/bin:/usr/bin:/bin"
    assert task_path("", python) == "/task/bin"
    # Named on purpose, the agent's own environment is still allowed (and first).
    own = TaskPython("/agent/bin/python", "/agent/bin")
    assert task_path(inherited, own, ["/agent/bin"]) == "/agent/bin:/usr/bin:/task/bin:/bin"


def test_the_agents_own_venv_is_what_is_hidden() -> None:
    hidden = agent_bin_dirs()
    if sys.prefix == sys.base_prefix:
        assert hidden == ()
    else:
        assert str(Path(sys.prefix) / "bin") in hidden
        assert str(Path(sys.executable).parent) in hidden
