"""`det deploy local`: options, the plan of processes, the state file, and real processes.

The processes here are real (sleepers, a real master); agents are covered by the end-to-end
tests once the agent daemon exists.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from agent.runtimes import supervise
from cli.auth import TokenStore, auth_file_path
from cli.deploy import local
from cli.errors import CliError
from cli.main import app

PY = "/usr/bin/python-test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def options(tmp_path: Path, **kw: object) -> local.LocalOptions:
    return local.LocalOptions(data_dir=tmp_path / "data", **kw)  # type: ignore[arg-type]


# --- options and plan --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"agents": -1}, "--agents must be 0 or more"),
        ({"slots_per_agent": 0}, "--slots-per-agent must be at least 1"),
        ({"runtime": "podman"}, "--runtime must be one of auto, docker, process"),
        ({"port": 0}, "--port must be between 1 and 65535"),
        ({"port": 70000}, "--port must be between 1 and 65535"),
        ({"master_config": Path("/nonexistent/master.yaml")}, "no such file"),
    ],
)
def test_bad_options_are_refused_with_the_flag_name(
    tmp_path: Path, kw: dict[str, object], message: str
) -> None:
    with pytest.raises(CliError, match=message):
        options(tmp_path, **kw)


def test_plan_starts_the_master_first_then_one_agent_per_id(tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text("log: {level: info}\n")
    opts = options(tmp_path, agents=3, slots_per_agent=2, port=18080, master_config=config)
    launches = local.plan(opts, "process", PY, "pw")

    master, *agents = launches
    assert master.role == "master"
    assert master.argv == (
        PY, "-m", "controlplane", "--host", "127.0.0.1", "--port", "18080",
        "--data-dir", str(tmp_path / "data"), "--config-file", str(config),
    )  # fmt: skip
    assert master.env == {"DET_SECURITY_INITIAL_USER_PASSWORD": "pw"}
    assert master.log == tmp_path / "data" / "logs" / "master.log"

    assert [a.name for a in agents] == ["local-agent-0", "local-agent-1", "local-agent-2"]
    first = agents[0].argv
    assert first[:3] == (PY, "-m", "agent")
    flags = dict(zip(first[3::2], first[4::2], strict=True))
    assert flags == {
        "--master-host": "127.0.0.1",
        "--master-port": "18080",
        "--agent-id": "local-agent-0",
        "--container-runtime": "process",
        "--work-dir": str(tmp_path / "data" / "agents" / "local-agent-0"),
        "--artificial-slots": "2",
    }
    assert {a.log.name for a in agents} == {f"local-agent-{i}.log" for i in range(3)}
    assert agents[0].env == {}  # the agent's runtime, not the deployment, picks tasks' python3


def test_without_slots_per_agent_the_agent_detects_its_devices(tmp_path: Path) -> None:
    (_, agent) = local.plan(options(tmp_path, agents=1), "docker", PY, "pw")
    assert "--artificial-slots" not in agent.argv
    assert agent.argv[agent.argv.index("--container-runtime") + 1] == "docker"


def test_children_do_not_inherit_the_callers_client_credentials() -> None:
    base = {"PATH": "/bin", "DET_USER": "me", "DET_PASS": "secret", "DET_MASTER": "x:1",
            "DET_DB_URL": "postgresql+asyncpg://db"}  # fmt: skip
    env = local.child_environment(base, {"DET_SECURITY_INITIAL_USER_PASSWORD": "pw"})
    assert env == {
        "PATH": "/bin",
        "DET_DB_URL": "postgresql+asyncpg://db",
        "DET_SECURITY_INITIAL_USER_PASSWORD": "pw",
    }


def test_runtime_choice() -> None:
    def never_asked() -> bool:
        raise AssertionError("process must not probe docker")

    assert local.choose_runtime("process", never_asked) == "process"
    assert local.choose_runtime("auto", lambda: True) == "docker"
    assert local.choose_runtime("auto", lambda: False) == "process"
    assert local.choose_runtime("docker", lambda: True) == "docker"
    with pytest.raises(CliError, match="no Docker engine answers"):
        local.choose_runtime("docker", lambda: False)


def test_default_data_dir_is_the_masters_embedded_default() -> None:
    assert local.default_data_dir({"XDG_DATA_HOME": "/x"}) == Path("/x/resolute")
    assert local.default_data_dir({}) == Path.home() / ".local/share/resolute"


def test_password_is_made_once_and_private(tmp_path: Path) -> None:
    first = local.ensure_password(tmp_path)
    assert len(first) >= 20
    assert local.ensure_password(tmp_path) == first
    assert (tmp_path / "admin-password").stat().st_mode & 0o077 == 0


# --- state file --------------------------------------------------------------------------------


def test_state_round_trips_and_a_corrupt_file_is_reported(tmp_path: Path) -> None:
    dep = local.Deployment(
        data_dir=str(tmp_path), master_url="http://127.0.0.1:1", port=1, runtime="process",
        agent_ids=["local-agent-0"], slots_per_agent=2, started_at=1.5,
        processes=[local.ProcessRecord("master", "master", 123, 456, "m.log")],
    )  # fmt: skip
    local.write_state(dep)
    assert local.read_state(tmp_path) == dep
    local.remove_state(tmp_path)
    assert local.read_state(tmp_path) is None
    (tmp_path / local.STATE_FILE).write_text("{not json")
    with pytest.raises(CliError, match="is not a deployment record"):
        local.read_state(tmp_path)


# --- real processes ----------------------------------------------------------------------------


@pytest.fixture
def spawned(tmp_path: Path) -> Iterator[list[local.ProcessRecord]]:
    """Records of processes started by a test; whatever is left is killed afterwards."""
    records: list[local.ProcessRecord] = []
    yield records
    for r in records:
        if local.alive(r):
            os.kill(r.pid, signal.SIGKILL)


def start(tmp_path: Path, name: str, code: str) -> local.ProcessRecord:
    launch = local.Launch(
        name=name, role="agent", argv=(sys.executable, "-c", code), env={},
        log=tmp_path / "logs" / f"{name}.log",
    )  # fmt: skip
    return local.spawn(launch)


SLEEPER = "import time; print('up', flush=True); time.sleep(60)"
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, lambda *a: print('ignored', flush=True));"
    " print('up', flush=True); time.sleep(60)"
)


def wait_for_line(path: str, text: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    # A whole line: the log's first line (the command) holds the code that prints it.
    while text not in Path(path).read_text(errors="replace").splitlines():
        assert time.monotonic() < deadline, f"{text!r} never appeared in {path}"
        time.sleep(0.02)


def test_spawned_process_is_detached_and_logs_to_its_file(
    tmp_path: Path, spawned: list[local.ProcessRecord]
) -> None:
    rec = start(tmp_path, "sleeper", SLEEPER)
    spawned.append(rec)
    wait_for_line(rec.log, "up")
    assert os.getsid(rec.pid) == rec.pid  # its own session: a closed terminal does not stop it
    assert local.alive(rec)
    assert rec.start_ticks is not None


def test_terminate_uses_sigterm_then_sigkill_after_the_grace(
    tmp_path: Path, spawned: list[local.ProcessRecord]
) -> None:
    polite = start(tmp_path, "polite", SLEEPER)
    stubborn = start(tmp_path, "stubborn", STUBBORN)
    spawned += [polite, stubborn]
    wait_for_line(polite.log, "up")
    wait_for_line(stubborn.log, "up")

    t0 = time.monotonic()
    killed = local.terminate([polite, stubborn], grace_s=1.0)
    elapsed = time.monotonic() - t0

    assert [r.name for r in killed] == ["stubborn"]
    assert not local.alive(polite) and not local.alive(stubborn)
    assert "ignored" in Path(stubborn.log).read_text().splitlines()  # it got the SIGTERM first
    assert 1.0 <= elapsed < 6.0
    assert local.terminate([polite, stubborn], grace_s=1.0) == []  # nothing left: a no-op


def test_a_reused_pid_is_never_signalled(
    tmp_path: Path, spawned: list[local.ProcessRecord]
) -> None:
    rec = start(tmp_path, "sleeper", SLEEPER)
    spawned.append(rec)
    wait_for_line(rec.log, "up")
    assert rec.start_ticks is not None
    impostor = local.ProcessRecord(rec.name, rec.role, rec.pid, rec.start_ticks - 1, rec.log)
    assert not local.alive(impostor)
    assert local.terminate([impostor], grace_s=0.1) == []
    assert local.alive(rec)  # the process that really owns the pid was left alone


def test_port_in_use() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert local.port_in_use("127.0.0.1", port)
    assert not local.port_in_use("127.0.0.1", free_port())


def test_up_refuses_a_taken_port_before_starting_anything(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(CliError, match=f"port {port} on 127.0.0.1 is already in use"):
            local.up(options(tmp_path, agents=0, port=port, runtime="process"))
    assert local.read_state(tmp_path / "data") is None
    assert not (tmp_path / "data" / "logs").exists()


def test_up_shows_the_master_log_when_the_master_dies(tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text("no_such_setting: 1\n")
    opts = options(tmp_path, agents=0, port=free_port(), runtime="process", master_config=config)
    with pytest.raises(CliError) as info:
        local.up(opts, timeout_s=30)
    message = info.value.message
    assert message.startswith("the master exited during start-up; last lines of ")
    assert "invalid configuration" in message and "no_such_setting" in message
    assert local.read_state(tmp_path / "data") is None


def test_up_finishes_stopping_a_partial_deployment(
    tmp_path: Path, spawned: list[local.ProcessRecord]
) -> None:
    data = tmp_path / "data"
    leftover = start(data, "local-agent-0", SLEEPER)
    spawned.append(leftover)
    wait_for_line(leftover.log, "up")
    dead = local.ProcessRecord("master", "master", 2**22 + 7, 1, str(data / "logs/master.log"))
    local.write_state(
        local.Deployment(
            data_dir=str(data), master_url="http://127.0.0.1:1", port=1, runtime="process",
            agent_ids=["local-agent-0"], slots_per_agent=None, started_at=0.0,
            processes=[dead, leftover],
        )
    )  # fmt: skip
    # The port is taken so that up stops right after the clean-up, before starting a master.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with pytest.raises(CliError, match="already in use"):
            local.up(options(tmp_path, agents=0, port=listener.getsockname()[1]), grace_s=2)
    assert not local.alive(leftover)
    assert local.read_state(data) is None


# --- the command, with a real master -----------------------------------------------------------


def det(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_cli_rejects_bad_flags_with_usage_errors(tmp_path: Path) -> None:
    code, out = det("deploy", "local", "up", "--agents", "-1", "--data-dir", str(tmp_path))
    assert code == 2 and "--agents" in out
    code, out = det("deploy", "local", "up", "--runtime", "podman", "--data-dir", str(tmp_path))
    assert code == 1 and "--runtime must be one of" in out
    assert local.read_state(tmp_path) is None


def test_down_with_nothing_recorded_is_a_no_op(tmp_path: Path) -> None:
    code, out = det("deploy", "local", "down", "--data-dir", str(tmp_path))
    assert code == 0, out
    assert "Nothing to stop" in out


def test_up_then_down_a_master_only_deployment(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()
    args = ["--agents", "0", "--port", str(port), "--data-dir", str(data)]
    code, out = det("deploy", "local", "up", *args, "--runtime", "process")
    assert code == 0, out
    url = f"http://127.0.0.1:{port}"
    assert url in out and str(data / "logs" / "master.log") in out
    try:
        assert httpx.get(f"{url}/info").json()["version"]
        state = json.loads((data / local.STATE_FILE).read_text())
        (master,) = state["processes"]
        assert state["runtime"] == "process" and master["name"] == "master"
        # `up` logged the caller in as admin: the cached token works.
        store = TokenStore(auth_file_path())
        token = store.get_token(url, "admin")
        assert store.get_active_user(url) == "admin"
        me = httpx.get(f"{url}/api/v1/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 200 and me.json()["user"]["username"] == "admin"

        code, out = det("deploy", "local", "up", *args)
        assert code == 0 and "Already running" in out
        assert json.loads((data / local.STATE_FILE).read_text()) == state
    finally:
        code, out = det("deploy", "local", "down", "--data-dir", str(data))
    assert code == 0 and "Stopped: master" in out
    assert not local.alive(local.ProcessRecord(**master))
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/info")
    code, out = det("deploy", "local", "down", "--data-dir", str(data))
    assert code == 0 and "Nothing to stop" in out


def test_down_works_from_another_process(tmp_path: Path) -> None:
    """The state file is all `down` needs: a separate `det` process stops what `up` started."""
    data = tmp_path / "data"
    port = free_port()
    det_bin = str(Path(sys.executable).parent / "det")
    env = {**os.environ, "DET_DEBUG_CONFIG_PATH": str(tmp_path / "cfg")}
    up = subprocess.run(
        [det_bin, "deploy", "local", "up", "--agents", "0", "--port", str(port),
         "--data-dir", str(data), "--runtime", "process"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert up.returncode == 0, up.stderr + up.stdout
    pid = json.loads((data / local.STATE_FILE).read_text())["processes"][0]["pid"]
    down = subprocess.run(
        [det_bin, "deploy", "local", "down", "--data-dir", str(data)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert down.returncode == 0, down.stderr + down.stdout
    assert "Stopped: master" in down.stdout
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_down_stops_process_runtime_tasks_the_agents_left(tmp_path: Path) -> None:
    """Tasks outlive their agent (so a restarted agent can reattach); `down` ends them too."""
    data = tmp_path / "data"
    folder = data / "agents" / "local-agent-0" / "containers" / "t1.1-0"
    folder.mkdir(parents=True)
    supervisor = subprocess.Popen(
        [sys.executable, "-I", "-S", supervise.__file__, str(folder), "--",
         sys.executable, "-c", "import time; time.sleep(60)"],
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while not (folder / "pids.json").exists():
            assert time.monotonic() < deadline, "the supervisor wrote no pids.json"
            time.sleep(0.02)
        pids = json.loads((folder / "pids.json").read_text())
        local.write_state(
            local.Deployment(
                data_dir=str(data), master_url="http://127.0.0.1:1", port=1, runtime="process",
                agent_ids=["local-agent-0"], slots_per_agent=1, started_at=0.0, processes=[],
            )
        )  # fmt: skip
        stopped = local.down(data, grace_s=5)
        assert stopped is not None and stopped.tasks == 1
        assert supervisor.wait(timeout=10) == 0  # it recorded the task's end and exited
        assert json.loads((folder / "exit.json").read_text())["exit_code"] == 128 + 15
        assert not local.alive(
            local.ProcessRecord("task", "task", pids["child_pid"], pids["child_start"], "")
        )
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
