"""Notebooks, TensorBoards and shells on the docker runtime (`det deploy local` with docker
agents): each runs in the test image (the host's Python mounted read-only), is reached through
the master's proxy (a shell with `det shell start` and the real `ssh`), and ends with its
container."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import Deploy, docker_image_config

SSHD = "/usr/sbin/sshd"
CONFIG = (
    "name: tb\nentrypoint: python3 x.py\nsearcher: {name: single, metric: loss, max_length: 1}\n"
    "resources: {slots_per_trial: 0}\n"
)

pytestmark = pytest.mark.slow


def test_a_notebook_on_the_docker_runtime_answers_through_the_proxy(deploy: Deploy) -> None:
    config = docker_image_config()
    d = deploy(agents=1, slots=1, runtime="docker")
    r = d.http.post("/api/v1/notebooks", json={"config": config})
    assert r.status_code == 200, r.text
    task_id = r.json()["notebook"]["id"]
    deadline = time.monotonic() + 180
    while True:
        task = d.get(f"/api/v1/tasks/{task_id}")["task"]
        assert task.get("endTime") is None, (task, d.http.get(f"/api/v1/tasks/{task_id}/logs").text)
        if task["allocations"] and task["allocations"][0]["isReady"]:
            break
        assert time.monotonic() < deadline, "the notebook was not ready within 180 s"
        time.sleep(0.5)
    status = d.http.get(f"/proxy/{task_id}/api/status")
    assert status.status_code == 200 and "started" in status.json(), status.text
    r = d.http.post(f"/api/v1/notebooks/{task_id}/kill")
    assert r.status_code == 200, r.text
    while d.get(f"/api/v1/notebooks/{task_id}")["notebook"]["state"] != "STATE_TERMINATED":
        assert time.monotonic() < deadline + 60, "the killed notebook did not end"
        time.sleep(0.5)


def _ready(d: Deploy, task_id: str, deadline: float) -> None:
    while True:
        task = d.get(f"/api/v1/tasks/{task_id}")["task"]
        assert task.get("endTime") is None, (task, d.http.get(f"/api/v1/tasks/{task_id}/logs").text)
        if task["allocations"] and task["allocations"][0]["isReady"]:
            return
        assert time.monotonic() < deadline, f"task {task_id} was not ready in time"
        time.sleep(0.5)


def test_a_tensorboard_on_the_docker_runtime_answers_through_the_proxy(deploy: Deploy) -> None:
    config = docker_image_config()
    d = deploy(agents=1, slots=1, runtime="docker")
    exp = d.post("/api/v1/experiments", {"config": CONFIG, "activate": False})
    body = {"config": config, "experimentIds": [exp["experiment"]["id"]]}
    r = d.http.post("/api/v1/tensorboards", json=body)
    assert r.status_code == 200, r.text
    task_id = r.json()["tensorboard"]["id"]
    _ready(d, task_id, time.monotonic() + 180)
    runs = d.http.get(f"/proxy/{task_id}/data/runs")
    assert runs.status_code == 200 and runs.json() == [], runs.text
    assert (
        d.http.get(f"/proxy/{task_id}/data/runs", headers={"Authorization": ""}).status_code == 401
    )
    d.post(f"/api/v1/tensorboards/{task_id}/kill")


def test_a_shell_on_the_docker_runtime_runs_a_command(deploy: Deploy, tmp_path: Path) -> None:
    if not (Path(SSHD).exists() and shutil.which("ssh") and shutil.which("ssh-keygen")):
        pytest.skip("needs Debian's openssh-server and openssh-client (scripts/setup.sh)")
    config = docker_image_config()
    # The test image is busybox: lend it the host's sshd and ssh-keygen (its /usr/lib is the
    # host's already), and a passwd naming sshd's privilege separation user, as an image with
    # openssh-server has.
    (tmp_path / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/sh\nsshd:x:100:65534::/run/sshd:/bin/false\n"
    )
    (tmp_path / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
    for host, container in (
        (SSHD, SSHD),
        (shutil.which("ssh-keygen"), "/usr/local/bin/ssh-keygen"),
        (str(tmp_path / "passwd"), "/etc/passwd"),
        (str(tmp_path / "group"), "/etc/group"),
    ):
        config["bind_mounts"].append(
            {"host_path": host, "container_path": container, "read_only": True}
        )
    d = deploy(agents=1, slots=1, runtime="docker")
    (tmp_path / "shell.yaml").write_text(json.dumps(config))
    done = d.det(
        "shell",
        "start",
        "--config-file",
        str(tmp_path / "shell.yaml"),
        "--",
        "echo",
        "in-$((6*7))",
        timeout=240,
    )
    assert done.returncode == 0 and "in-42" in done.stdout, done.stdout + done.stderr
    done = d.det(
        "shell",
        "start",
        "--config-file",
        str(tmp_path / "shell.yaml"),
        "--",
        "exit",
        "7",
        timeout=240,
    )
    assert done.returncode == 7, done.stdout + done.stderr
