"""`det deploy local up` gives process-runtime agents a task Python of their own: a task venv
made once in the data directory (or the one `--task-python` names), never the environment the
master and agents run in."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest

from cli.client import ApiClient
from cli.deploy import local
from cli.errors import CliError

pytestmark = pytest.mark.no_docker_engine  # it names docker, starts no container

PY = "/usr/bin/python-test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def options(tmp_path: Path, **kw: object) -> local.LocalOptions:
    return local.LocalOptions(data_dir=tmp_path / "data", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("runtime", "asked", "expected"),
    [
        ("process", None, ("{tmp}/data/task-venv", "{tmp}/data/task-venv")),
        ("process", "{tmp}/opt-venv", ("{tmp}/opt-venv", None)),
        ("process", "python3.12", ("python3.12", None)),
        ("docker", None, ("", None)),
        ("docker", "{tmp}/opt-venv", ("", None)),
    ],
)
def test_which_python_the_agents_get(
    tmp_path: Path, runtime: str, asked: str | None, expected: tuple[str, str | None]
) -> None:
    (tmp_path / "opt-venv").mkdir()
    asked = asked.replace("{tmp}", str(tmp_path)) if asked else None
    value, venv = local.task_python_for(options(tmp_path, task_python=asked), runtime)
    want_value, want_venv = (e.replace("{tmp}", str(tmp_path)) if e else e for e in expected)
    assert (value, str(venv) if venv else None) == (want_value, want_venv)


def test_no_agents_need_no_task_venv(tmp_path: Path) -> None:
    assert local.task_python_for(options(tmp_path, agents=0), "process") == ("", None)


def test_a_relative_task_python_is_made_absolute_without_resolving_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    value, venv = local.task_python_for(options(tmp_path, task_python="link"), "process")
    assert value == "link"  # no '/': a command name, looked up by the agent, left as it is
    value, venv = local.task_python_for(options(tmp_path, task_python="./link"), "process")
    assert (value, venv) == (str(tmp_path / "link"), None)


@pytest.mark.parametrize(
    ("value", "message"),
    [("", "--task-python must not be empty"), ("/nowhere/venv", "no such file or directory")],
)
def test_a_bad_task_python_is_refused_with_the_flag_name(
    tmp_path: Path, value: str, message: str
) -> None:
    with pytest.raises(CliError, match=message):
        options(tmp_path, task_python=value)


def test_the_plan_hands_every_agent_the_task_python(tmp_path: Path) -> None:
    master, *agents = local.plan(options(tmp_path, agents=2), "process", PY, "pw", "/v/task")
    assert "--task-python" not in master.argv
    for agent in agents:
        flags = dict(zip(agent.argv[3::2], agent.argv[4::2], strict=True))
        assert flags["--task-python"] == "/v/task"
    (_, agent) = local.plan(options(tmp_path, agents=1), "docker", PY, "pw")
    assert "--task-python" not in agent.argv


def test_as_root_a_python_others_cannot_reach_makes_the_agents_single_user(
    tmp_path: Path,
) -> None:
    """The README's quickstart as root on a fresh machine: Python under a 0700 /root. Task
    users (uid 70000+) could not start it, so the agents run every task as root instead."""
    home = tmp_path / "root"
    python = home / "py" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.touch()
    home.chmod(0o700)
    data = tmp_path / "data"
    assert local.task_user_blockers([python, data], euid=0) == [str(home)]
    assert local.task_user_blockers([python, data], euid=1000) == []  # not root: single anyway
    home.chmod(0o701)
    assert local.task_user_blockers([python, data], euid=0) == []
    (_, agent) = local.plan(options(tmp_path, agents=1), "process", PY, "pw", single_user=True)
    assert "--single-user" in agent.argv
    (_, agent) = local.plan(options(tmp_path, agents=1), "process", PY, "pw")
    assert "--single-user" not in agent.argv


def test_the_task_venv_is_made_once_by_the_agent_package(tmp_path: Path) -> None:
    target = tmp_path / "data" / "task-venv"
    local.make_task_venv(sys.executable, target)
    marker = json.loads((target / "resolute-task-venv.json").read_text())
    assert marker["base"] == sys.executable and marker["layer"]
    stamp = (target / "bin" / "python").lstat().st_mtime_ns
    local.make_task_venv(sys.executable, target)
    assert (target / "bin" / "python").lstat().st_mtime_ns == stamp
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("")
    with pytest.raises(CliError, match=r"cannot make the task venv .* not a task venv made by"):
        local.make_task_venv(sys.executable, taken)


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


@pytest.mark.slow
def test_up_runs_tasks_in_the_deployments_task_venv(tmp_path: Path) -> None:
    data = tmp_path / "data"
    opts = local.LocalOptions(
        data_dir=data, agents=1, slots_per_agent=1, runtime="process", port=free_port()
    )
    started = local.up(opts, timeout_s=60, grace_s=5)
    try:
        venv = data / "task-venv"
        assert started.deployment.task_python == str(venv)
        assert local.read_state(data).task_python == str(venv)  # type: ignore[union-attr]
        (agent,) = started.deployment.by_role("agent")
        argv = _cmdline(agent.pid)
        assert argv[argv.index("--task-python") + 1] == str(venv)

        # The task runs as its owner's Unix user (agent/task_user.py): it writes where all may.
        shared = tmp_path / "out"
        shared.mkdir()
        shared.chmod(0o1777)
        out = shared / "seen.json"
        code = (
            "import json, os, sys; "
            f"json.dump([sys.prefix, os.environ['PATH']], open({str(out)!r}, 'w'))"
        )
        config = {"entrypoint": ["python3", "-c", code], "resources": {"slots": 1}}
        with ApiClient(opts.master_url) as client:
            client.token = started.token
            client.post("/api/v1/commands", {"config": config})
        deadline = time.monotonic() + 60
        while not out.exists() or not out.read_text():
            assert time.monotonic() < deadline, "the command never ran"
            time.sleep(0.1)
        prefix, path = json.loads(out.read_text())
        assert prefix == str(venv) != sys.prefix
        assert path.split(os.pathsep)[0] == str(venv / "bin")
        assert str(Path(sys.executable).parent) not in path.split(os.pathsep)[1:]
    finally:
        local.down(data, grace_s=5)
