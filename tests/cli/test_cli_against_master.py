"""End to end: our `det` against a real master subprocess on 127.0.0.1 (SQLite, temp data dir).

Slow because it starts the master once per module (a few seconds); every test gets its own
token store from the autouse `det_config_dir` fixture.
"""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from cli.auth import TokenStore, auth_file_path, hash_password
from cli.main import app

pytestmark = pytest.mark.slow

PASSWORD = "Cli-Test-Passw0rd"
# An ACTIVE experiment is shown by what its allocations do (Determined's enrichExperimentState).
ACTIVE_SHOWN = ("STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING")
DET = Path(sys.executable).with_name("det")
CONFIG = """\
# a tiny experiment; comments must survive the trip
name: cli-e2e
entrypoint: python3 train.py
searcher:
  name: single
  metric: loss
  max_length: 10
resources:
  slots_per_trial: 1
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Master:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Master]:
    """`python -m controlplane` on a free port; waits until GET /info answers."""
    base = tmp_path_factory.mktemp("master")
    port = _free_port()
    log = base / "master.log"
    env = {**os.environ, "DET_SECURITY_INITIAL_USER_PASSWORD": PASSWORD}
    cmd = [sys.executable, "-m", "controlplane", "--host", "127.0.0.1", "--port", str(port)]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [*cmd, "--data-dir", str(base / "data")], stdout=out, stderr=subprocess.STDOUT, env=env
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            pytest.fail(f"master exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url + "/info", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            process.terminate()
            pytest.fail(f"master did not answer GET /info:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    yield Master(url, process, log)
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def det(master: Master):
    """Run `det ARGS` in-process, as admin via DET_USER/DET_PASS unless `as_admin=False`."""

    def run(*args: str, input: str | None = None, as_admin: bool = True) -> Result:
        env = {"DET_MASTER": master.url}
        if as_admin:
            env |= {"DET_USER": "admin", "DET_PASS": PASSWORD}
        return CliRunner().invoke(app, list(args), input=input, env=env)

    return run


def ok(result: Result) -> str:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}"
    assert "Traceback" not in result.output
    return result.stdout


def fails(result: Result, *fragments: str) -> str:
    assert result.exit_code == 1, f"exit {result.exit_code}\n{result.output}"
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    prompts = [ln for ln in lines[:-1] if "password" in ln.lower() and ln.rstrip().endswith(":")]
    assert "Traceback" not in result.output and len(prompts) == len(lines) - 1, result.stderr
    message = lines[-1]
    for fragment in fragments:
        assert fragment in message, message
    return message


@pytest.fixture
def exp_files(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "exp.yaml"
    config.write_text(CONFIG)
    ctx = tmp_path / "ctx"
    (ctx / "sub").mkdir(parents=True)
    (ctx / "__pycache__").mkdir()
    (ctx / "train.py").write_text("print('hello from the trial')\n")
    (ctx / "sub" / "data.txt").write_text("data\n")
    (ctx / "sub" / "skip.txt").write_text("ignored\n")
    (ctx / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\0\0")
    (ctx / ".detignore").write_text("sub/skip.txt\n")
    return config, ctx


def create(det, *args: str) -> int:
    out = ok(det("experiment", "create", *args))
    assert out.startswith("Created experiment ")
    return int(out.split()[2])


def experiment(det, exp_id: int) -> dict[str, Any]:
    return json.loads(ok(det("e", "describe", str(exp_id), "--json")))["experiment"]


def admin_token(master: Master) -> str:
    body = {"username": "admin", "password": hash_password(PASSWORD), "isHashed": True}
    return httpx.post(master.url + "/api/v1/auth/login", json=body).json()["token"]


class TestAuth:
    def test_version_through_the_console_script(self, master: Master) -> None:
        proc = subprocess.run(
            [str(DET), "-m", master.url, "version"], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        assert "version: 0.38.1" in proc.stdout

    def test_login_whoami_logout(self, det, master: Master) -> None:
        ok(det("user", "login", "admin", input=PASSWORD + "\n", as_admin=False))
        store = TokenStore(auth_file_path())
        assert store.get_active_user(master.url) == "admin"
        assert "logged in as user 'admin'" in ok(det("user", "whoami", as_admin=False))
        who = json.loads(ok(det("user", "whoami", "--json", as_admin=False)))
        assert who["user"]["username"] == "admin"
        ok(det("user", "logout", as_admin=False))
        assert store.get_token(master.url, "admin") is None
        # Back to the `determined` fallback, which has a password on this master.
        fails(det("user", "whoami", as_admin=False), "Unauthenticated", "det user login")

    def test_wrong_password(self, det) -> None:
        result = det("user", "login", "admin", input="not-the-password\n", as_admin=False)
        fails(result, "login failed for user 'admin'")

    def test_cached_token_is_reused(self, det, master: Master) -> None:
        ok(det("user", "login", "admin", input=PASSWORD + "\n", as_admin=False))
        token = TokenStore(auth_file_path()).get_token(master.url, "admin")
        ok(det("e", "list", as_admin=False))
        assert TokenStore(auth_file_path()).get_token(master.url, "admin") == token

    def test_master_info_and_config(self, det) -> None:
        info = json.loads(ok(det("master", "info", "--json")))
        assert info["version"] == "0.38.1"
        assert "clusterId" in info
        ok(det("master", "config"))


class TestExperiments:
    def test_lifecycle(self, det, exp_files: tuple[Path, Path]) -> None:
        config, ctx = exp_files
        exp_id = create(det, str(config), str(ctx))
        listed = json.loads(ok(det("e", "list", "--json")))["experiments"]
        assert exp_id in [e["id"] for e in listed]
        assert str(exp_id) in ok(det("e", "list"))

        out = ok(det("e", "describe", str(exp_id)))
        assert "cli-e2e" in out and "STATE_" not in out
        assert "name: cli-e2e" in ok(det("e", "config", str(exp_id)))

        ok(det("e", "pause", str(exp_id)))
        assert experiment(det, exp_id)["state"] == "STATE_PAUSED"
        ok(det("e", "activate", str(exp_id)))
        assert experiment(det, exp_id)["state"] in ACTIVE_SHOWN

        ok(det("e", "set", "priority", str(exp_id), "10"))
        ok(det("e", "set", "weight", str(exp_id), "2.5"))
        ok(det("e", "set", "max-slots", str(exp_id), "4"))
        resources = experiment(det, exp_id)["config"]["resources"]
        assert (resources["priority"], resources["weight"], resources["max_slots"]) == (10, 2.5, 4)

        ok(det("e", "kill", str(exp_id)))
        deadline = time.monotonic() + 20
        while experiment(det, exp_id)["state"] not in ("STATE_CANCELED", "STATE_COMPLETED"):
            assert time.monotonic() < deadline, experiment(det, exp_id)["state"]
            time.sleep(0.2)

        ok(det("e", "archive", str(exp_id)))
        assert experiment(det, exp_id)["archived"] is True
        mine = [e["id"] for e in json.loads(ok(det("e", "list", "--json")))["experiments"]]
        everyone = json.loads(ok(det("e", "list", "--all", "--json")))["experiments"]
        assert exp_id not in mine and exp_id in [e["id"] for e in everyone]
        ok(det("e", "unarchive", str(exp_id)))
        assert experiment(det, exp_id)["archived"] is False

    def test_continue_and_fork(self, det, master: Master, exp_files) -> None:
        config, ctx = exp_files
        exp_id = create(det, "--paused", str(config), str(ctx))
        ok(det("e", "kill", str(exp_id)))
        assert experiment(det, exp_id)["state"] == "STATE_CANCELED"
        out = ok(det("e", "continue", str(exp_id), "--config", "max_restarts=3"))
        assert out.strip() == f"Continued experiment {exp_id}"
        described = json.loads(ok(det("e", "describe", str(exp_id), "--json")))
        assert described["experiment"]["state"] in ACTIVE_SHOWN
        assert described["experiment"]["config"]["max_restarts"] == 3
        assert [t["state"] for t in described["trials"]] == ["STATE_ACTIVE"]
        failed = det("e", "continue", str(exp_id))
        assert failed.exit_code != 0 and "only an ended experiment" in failed.output
        out = ok(det("e", "fork", str(exp_id), "--config", "name=forked", "--paused"))
        child = int(out.split()[2])
        assert out.strip() == f"Created experiment {child} (forked from {exp_id})"
        forked = experiment(det, child)
        assert forked["name"] == "forked" and forked["state"] == "STATE_PAUSED"
        headers = {"Authorization": f"Bearer {admin_token(master)}"}
        code = [
            httpx.get(f"{master.url}/api/v1/experiments/{e}/model_def", headers=headers).json()
            for e in (exp_id, child)
        ]
        assert code[0] == code[1]
        for e in (exp_id, child):
            ok(det("e", "kill", str(e)))

    def test_context_reaches_the_master(self, det, master: Master, exp_files) -> None:
        config, ctx = exp_files
        exp_id = create(det, str(config), str(ctx))
        headers = {"Authorization": f"Bearer {admin_token(master)}"}
        reply = httpx.get(f"{master.url}/api/v1/experiments/{exp_id}/model_def", headers=headers)
        assert reply.status_code == 200, reply.text
        with tarfile.open(fileobj=io.BytesIO(base64.b64decode(reply.json()["b64Tgz"]))) as tar:
            names = sorted(n.removeprefix("./") for n in tar.getnames())
        assert names == ["sub", "sub/data.txt", "train.py"]

    def test_paused_with_overrides(self, det, exp_files) -> None:
        config, _ = exp_files
        exp_id = create(det, "--paused", "--config", "resources.slots_per_trial=2", str(config))
        exp = experiment(det, exp_id)
        assert exp["state"] == "STATE_PAUSED"
        assert exp["config"]["resources"]["slots_per_trial"] == 2
        ok(det("e", "kill", str(exp_id)))

    def test_trials_logs_and_checkpoints(self, det, master: Master, exp_files) -> None:
        config, ctx = exp_files
        exp_id = create(det, str(config), str(ctx))
        trials = json.loads(ok(det("e", "list-trials", str(exp_id), "--json")))["trials"]
        assert len(trials) == 1
        trial_id = trials[0]["id"]
        assert str(trial_id) in ok(det("e", "list-trials", str(exp_id)))

        described = json.loads(ok(det("trial", "describe", str(trial_id), "--json")))
        assert described["trial"]["experimentId"] == exp_id
        assert described["workloads"] == []
        assert "Workloads" in ok(det("t", "describe", str(trial_id)))

        headers = {"Authorization": f"Bearer {admin_token(master)}"}
        task_id = described["trial"]["taskId"]
        logs = [{"taskId": task_id, "log": f"line {i}\n"} for i in range(1, 4)]
        posted = httpx.post(f"{master.url}/api/v1/task/logs", json={"logs": logs}, headers=headers)
        assert posted.status_code == 200, posted.text

        assert ok(det("t", "logs", str(trial_id))) == "line 1\nline 2\nline 3\n"
        assert ok(det("t", "logs", str(trial_id), "--tail", "2")) == "line 2\nline 3\n"
        assert ok(det("e", "logs", str(exp_id))) == "line 1\nline 2\nline 3\n"

        assert json.loads(ok(det("e", "list-checkpoints", str(exp_id), "--json"))) == {
            "checkpoints": []
        }
        ok(det("e", "kill", str(exp_id)))

    def test_follow_ends_when_the_experiment_is_killed(self, det, master: Master, exp_files):
        config, ctx = exp_files
        env = {
            **os.environ,
            "DET_MASTER": master.url,
            "DET_USER": "admin",
            "DET_PASS": PASSWORD,
            "DET_DEBUG_CONFIG_PATH": str(auth_file_path().parent),
        }
        follow = subprocess.Popen(
            [str(DET), "e", "create", "-f", str(config), str(ctx)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            first = follow.stdout.readline()  # type: ignore[union-attr]
            assert first.startswith("Created experiment "), first + follow.stderr.read()  # type: ignore[union-attr]
            exp_id = int(first.split()[2])
            time.sleep(1.0)  # let it reach the log stream
            ok(det("e", "kill", str(exp_id)))
            rest, err = follow.communicate(timeout=60)
        finally:
            if follow.poll() is None:
                follow.kill()
        assert follow.returncode == 0, err
        assert f"Experiment {exp_id} ended in state CANCELED" in rest

    def test_unknown_experiment(self, det) -> None:
        fails(det("e", "describe", "999999"), "999999")
        fails(det("e", "pause", "999999"), "999999")

    def test_unknown_checkpoint(self, det) -> None:
        fails(det("checkpoint", "describe", "no-such-uuid"), "no-such-uuid")

    def test_bad_config_never_reaches_the_master(self, det, tmp_path: Path) -> None:
        bad = tmp_path / "bad.yaml"
        bad.write_text("name: [unclosed\n")
        fails(det("e", "create", str(bad)), "invalid YAML")

    def test_master_rejects_invalid_config(self, det, tmp_path: Path) -> None:
        cfg = tmp_path / "nosearcher.yaml"
        cfg.write_text("name: x\nsearcher: {name: no-such-searcher}\n")
        fails(det("e", "create", str(cfg)), "no-such-searcher", "HTTP 400")


class TestTemplates:
    def test_round_trip_and_create_with_template(self, det, tmp_path: Path, exp_files) -> None:
        template = tmp_path / "t.yaml"
        template.write_text("max_restarts: 7\ndescription: from-template\n")
        assert ok(det("template", "set", "cli-t1", str(template))) == "Set template cli-t1\n"
        template.write_text("max_restarts: 7\ndescription: from-template-v2\n")
        ok(det("template", "set", "cli-t1", str(template)))  # exists now: PATCH
        assert "cli-t1" in ok(det("template", "list"))
        names = [t["name"] for t in json.loads(ok(det("template", "list", "--json")))["templates"]]
        assert "cli-t1" in names
        assert ok(det("template", "describe", "cli-t1")) == (
            "max_restarts: 7\ndescription: from-template-v2\n"
        )

        config, ctx = exp_files
        exp_id = create(det, "--template", "cli-t1", str(config), str(ctx))
        conf = experiment(det, exp_id)["config"]
        assert conf["max_restarts"] == 7 and conf["description"] == "from-template-v2"
        ok(det("e", "kill", str(exp_id)))

        assert ok(det("template", "remove", "cli-t1")) == "Removed template cli-t1\n"
        fails(det("template", "describe", "cli-t1"), "cli-t1")


class TestUsers:
    def test_create_deactivate_activate_change_password(self, det) -> None:
        ok(det("user", "create", "cli-carol", "--password", "Carol-Passw0rd"))
        users = json.loads(ok(det("user", "list", "--json")))["users"]
        assert "cli-carol" in [u["username"] for u in users]
        assert "cli-carol" in ok(det("user", "list"))

        def login(password: str) -> Result:
            return det("user", "login", "cli-carol", input=password + "\n", as_admin=False)

        ok(login("Carol-Passw0rd"))
        ok(det("user", "deactivate", "cli-carol"))
        fails(login("Carol-Passw0rd"), "login failed for user 'cli-carol'")
        ok(det("user", "activate", "cli-carol"))
        ok(login("Carol-Passw0rd"))

        new = "Carol-Passw0rd-2"
        ok(det("user", "change-password", "cli-carol", input=f"{new}\n{new}\n"))
        fails(login("Carol-Passw0rd"), "login failed")
        ok(login(new))
