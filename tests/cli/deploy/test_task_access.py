"""`det deploy local up` never reports a deployment whose tasks cannot start: run as root from a
folder others cannot pass through (root's 0700 home), it makes process agents single-user, keeps
docker tasks as their owners (bind mounts), refuses a rootless engine, and says which in its
summary (cli/deploy/task_access.py)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.commands.deploy import _describe
from cli.deploy import local, task_access
from cli.main import app

pytestmark = pytest.mark.no_docker_engine  # it names docker, starts no container

ROOT_HOME = ["/root"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("runtime", "euid", "blocked", "rootless", "single_user", "summary", "error"),
    [
        # Not root: agents cannot switch users, whatever the folders.
        ("process", 1000, [], False, False, "every task runs as uid 1000", None),
        ("docker", 1000, [], True, False, "every task runs as the image's own user", None),
        # Root, nothing in the way: tasks as their owners on either runtime.
        ("process", 0, [], False, False, "their owners' Unix users", None),
        ("docker", 0, [], True, False, "their owners' Unix users", None),
        # Root under a 0700 /root: process tasks open host paths, so single-user.
        ("process", 0, ROOT_HOME, False, True, "single-user: every task runs as root", None),
        # docker: bind mounts are resolved by the (root) engine, the folders above never walked.
        ("docker", 0, ROOT_HOME, False, False, "docker bind-mounts what tasks need", None),
        # A rootless engine resolves them as its own user: nothing would run, so `up` refuses.
        ("docker", 0, ROOT_HOME, True, False, "", "the Docker engine runs rootless"),
    ],
)
def test_the_decision_table(
    runtime: str,
    euid: int,
    blocked: list[str],
    rootless: bool,
    single_user: bool,
    summary: str,
    error: str | None,
) -> None:
    access = task_access.decide(runtime, euid, blocked, rootless)
    assert access.single_user is single_user
    assert summary in access.summary
    if error is None:
        assert access.error is None
        if blocked and euid == 0:
            assert "/root" in access.summary  # the summary names what is in the way
    else:
        assert access.error is not None and error in access.error
        assert "--runtime process" in access.error and "chmod o+x /root" in access.error


def closed_home(tmp_path: Path) -> Path:
    """A 0700 folder, as root's home, holding the deployment's data directory."""
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    home.chmod(0o700)
    return home


def test_docker_under_a_closed_home_keeps_owners_and_says_why(tmp_path: Path) -> None:
    home = closed_home(tmp_path)
    opts = local.LocalOptions(data_dir=home / "data", runtime="docker")
    access, single_because = local.check_task_access(
        opts, "docker", "/usr/bin/python3", None, euid=0, detect_rootless=lambda: False
    )
    assert not access.single_user and single_because == []
    assert str(home) in access.summary and "bind-mounts" in access.summary
    (_, agent) = local.plan(opts, "docker", "/usr/bin/python3", "pw", "", access.single_user)
    assert "--single-user" not in agent.argv


def test_a_rootless_engine_under_a_closed_home_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    home = closed_home(tmp_path)
    opts = local.LocalOptions(data_dir=home / "data", runtime="docker", port=free_port())
    with pytest.raises(local.CliError, match="rootless") as info:
        local.up(opts, detect_docker=lambda: True, detect_rootless=lambda: True, euid=0)
    assert str(home) in info.value.message
    assert local.read_state(home / "data") is None
    assert not (home / "data" / "logs").exists()  # no master, no agent was started
    # Others may pass through: the same engine is fine.
    home.chmod(0o701)
    access, _ = local.check_task_access(
        opts, "docker", "/usr/bin/python3", None, euid=0, detect_rootless=lambda: True
    )
    assert access.error is None and access.summary == "their owners' Unix users"


@pytest.mark.skipif(os.geteuid() != 0, reason="`up` checks task users only when run as root")
def test_the_command_fails_with_the_reason_and_a_non_zero_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = closed_home(tmp_path)
    monkeypatch.setattr(local, "docker_answers", lambda: True)
    monkeypatch.setattr(local, "docker_rootless", lambda: True)
    args = ["deploy", "local", "up", "--runtime", "docker", "--port", str(free_port())]
    result = CliRunner().invoke(app, [*args, "--data-dir", str(home / "data")])
    assert result.exit_code == 1, result.output
    assert "the Docker engine runs rootless" in result.output
    assert "Local deployment is up" not in result.output
    assert local.read_state(home / "data") is None


def test_process_tasks_need_the_packages_their_venv_is_layered_over(tmp_path: Path) -> None:
    """The task venv reads torch from the environment below it (.venv under /root, say) even
    when the data directory and the interpreter are open to all: that folder counts too."""
    data = tmp_path / "open" / "data"
    venv = data / local.TASK_VENV_DIR
    venv.mkdir(parents=True)
    home = tmp_path / "home"
    site = home / "checkout" / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    home.chmod(0o700)
    (venv / local.TASK_VENV_MARKER).write_text(json.dumps({"layer": [str(site)]}))
    opts = local.LocalOptions(data_dir=data, runtime="process")
    python = shutil.which("python3") or "/usr/bin/python3"
    needs = local.task_needs(opts, "process", python, venv)
    assert site in needs
    blocked = local.task_user_blockers([p for p in needs if p == site], euid=0)
    assert blocked == [str(home)]
    access = task_access.decide("process", 0, blocked)
    assert access.single_user and str(home) in access.summary


def test_a_master_config_moves_the_checkpoint_folder_tasks_need(tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text("checkpoint_storage:\n  type: shared_fs\n  host_path: /srv/ckpt\n")
    opts = local.LocalOptions(data_dir=tmp_path / "data", master_config=config)
    assert local.checkpoint_folder(opts) == Path("/srv/ckpt")
    config.write_text("checkpoint_storage:\n  type: s3\n  bucket: b\n")
    assert local.checkpoint_folder(opts) == tmp_path / "data" / "checkpoints"


def test_the_summary_says_how_tasks_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deployment = local.Deployment(
        data_dir=str(tmp_path), master_url="http://127.0.0.1:1", port=1, runtime="docker",
        agent_ids=[], slots_per_agent=None, started_at=0.0,
        task_users="their owners' Unix users (docker bind-mounts what tasks need, …)",
    )  # fmt: skip
    _describe(deployment, tmp_path / "pw")
    assert "Task users      their owners' Unix users (docker bind-mounts" in capsys.readouterr().out
    # A state file written before the field existed still reads, and still says single-user.
    old = deployment.to_json()
    del old["task_users"]
    old["single_user_because"] = ["/root"]
    _describe(local.Deployment.from_json(old), tmp_path / "pw")
    assert "single-user (others cannot pass through /root)" in capsys.readouterr().out


@pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("setpriv")),
    reason="needs root, unshare and setpriv",
)
def test_the_docker_premise_a_bind_mount_is_reached_without_the_folders_above_it(
    tmp_path: Path,
) -> None:
    """What the docker row rests on, shown with the kernel's own bind mount (what the engine
    makes for a container): another user reads through the mount what the path refuses."""
    home = closed_home(tmp_path)
    data = home / "data"
    (data / "f").write_text("ok")
    os.chmod(data / "f", 0o644)
    target = tmp_path / "mnt"
    target.mkdir()
    script = (
        f"mount --bind {data} {target} && setpriv --reuid=65534 --regid=65534 --clear-groups "
        f'sh -c \'cat {data}/f 2>/dev/null; echo " direct=$?"; cat {target}/f; echo " bind=$?"\''
    )
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr.strip()}")
    assert done.stdout.split() == ["direct=1", "ok", "bind=0"], done.stdout + done.stderr
