"""`det notebook|tensorboard|shell` against an in-memory fake master: what they send, how they
wait for readiness, and their errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.fake_master import (
    MASTER,
    FakeMaster,
    error_body,
    logged_in,
    ndjson,
    paged,
    run_det,
)

NB_ID = "0b8f9a3e-4c59-4a57-9d7e-2f0f2b6c1a11"
NOTEBOOK = {
    "id": NB_ID, "description": "JupyterLab (able-ant)", "state": "STATE_QUEUED",
    "username": "admin", "resourcePool": "aux", "serviceAddress": f"/proxy/{NB_ID}/",
    "startTime": "2026-01-02T03:04:05Z", "jobId": "j", "workspaceId": 1, "userId": 1,
}  # fmt: skip


def master_with_task(states: list[dict[str, Any]]) -> FakeMaster:
    """A master whose GET /tasks/{id} answers `states` in turn (the last one repeats)."""
    master = FakeMaster(users={"admin": "secret"})
    logged_in(master)
    answers = iter(states)
    last: dict[str, Any] = {}

    def task(_: httpx.Request) -> dict[str, Any]:
        nonlocal last
        last = next(answers, last)
        return {"task": {"taskId": NB_ID, "taskType": "TASK_TYPE_NOTEBOOK", **last}}

    master.add("GET", f"/api/v1/tasks/{NB_ID}", task)
    return master


QUEUED = {"allocations": [], "startTime": "2026-01-02T03:04:05Z"}
STARTING = {"allocations": [{"isReady": False}], "startTime": "2026-01-02T03:04:05Z"}
READY = {"allocations": [{"isReady": True}], "startTime": "2026-01-02T03:04:05Z"}
ENDED = {**STARTING, "endTime": "2026-01-02T03:05:05Z"}


def test_notebook_start_sends_the_config_and_waits_until_ready(tmp_path: Path) -> None:
    master = master_with_task([QUEUED, STARTING, READY])
    master.add("POST", "/api/v1/notebooks", {"notebook": NOTEBOOK, "config": {}})
    cfg = tmp_path / "nb.yaml"
    cfg.write_text("idle_timeout: 30m\nresources:\n  slots: 1\n")
    result = run_det(
        master, "notebook", "start", "--no-browser", "--config-file", str(cfg),
        "--config", "notebook_idle_type=activity", "-v", "/data:/mnt/data", "--template", "tpl",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (body,) = master.json_bodies("POST", "/api/v1/notebooks")
    assert body == {
        "config": {
            "idle_timeout": "30m",
            "resources": {"slots": 1},
            "notebook_idle_type": "activity",
            "bind_mounts": [{"host_path": "/data", "container_path": "/mnt/data"}],
        },
        "templateName": "tpl",
    }
    assert len(master.calls("GET", f"/api/v1/tasks/{NB_ID}")) == 3
    assert f"Jupyter Notebook is running at: {MASTER}/det/interactive/{NB_ID}/" in result.output
    assert f"Connect to remote Jupyter server: {MASTER}/proxy/{NB_ID}/" in result.output


def test_notebook_that_ends_before_it_is_ready_is_an_error() -> None:
    master = master_with_task([STARTING, ENDED])
    master.add("POST", "/api/v1/notebooks", {"notebook": NOTEBOOK, "config": {}})
    master.add("GET", f"/api/v1/tasks/{NB_ID}/logs", ndjson())
    result = run_det(master, "notebook", "start", "--no-browser")
    assert result.exit_code == 1
    assert f"notebook {NB_ID} ended before it was ready" in result.output
    assert f"all of its logs: det notebook logs {NB_ID}" in result.output


def test_a_shell_that_fails_says_why() -> None:
    """Issue 39, finding 9: the reason (the exit, sshd's own words) in the error itself."""
    ended = {
        "allocations": [{"isReady": False, "exitReason": "exited with code 255"}],
        "startTime": "2026-01-02T03:04:05Z", "endTime": "2026-01-02T03:05:05Z",
    }  # fmt: skip
    master = master_with_task([STARTING, ended])
    shell = {**NOTEBOOK, "description": "Shell (able-ant)"}
    master.add("POST", "/api/v1/shells", {"shell": shell, "config": {}})
    lines = ["Privilege separation user sshd does not exist\n", "shell exited before it answered\n"]
    master.add(
        "GET",
        f"/api/v1/tasks/{NB_ID}/logs",
        ndjson(*({"id": i, "log": line} for i, line in enumerate(lines, 1))),
    )
    result = run_det(master, "shell", "start")
    assert result.exit_code == 1
    assert f"shell {NB_ID} ended before it was ready (exited with code 255)" in result.output
    assert "\n  Privilege separation user sshd does not exist\n" in result.output
    assert "\n  shell exited before it answered\n" in result.output
    assert f"all of its logs: det shell logs {NB_ID}" in result.output


def test_detach_prints_the_id_without_waiting() -> None:
    master = master_with_task([QUEUED])
    master.add("POST", "/api/v1/notebooks", {"notebook": NOTEBOOK, "config": {}})
    result = run_det(master, "notebook", "start", "-d")
    assert result.exit_code == 0 and result.output.strip() == NB_ID
    assert master.calls("GET", f"/api/v1/tasks/{NB_ID}") == []


def test_bad_volume_is_a_clear_error() -> None:
    master = master_with_task([QUEUED])
    result = run_det(master, "notebook", "start", "-v", "nocolon")
    assert result.exit_code != 0 and "HOST_PATH:CONTAINER_PATH" in result.output
    assert master.calls("POST", "/api/v1/notebooks") == []


def test_tensorboard_start_sends_experiment_and_trial_ids() -> None:
    master = master_with_task([READY])
    tb = {**NOTEBOOK, "description": "TensorBoard (x-y)"}
    master.add("POST", "/api/v1/tensorboards", {"tensorboard": tb, "config": {}})
    result = run_det(master, "tensorboard", "start", "3", "4", "-t", "9", "--no-browser")
    assert result.exit_code == 0, result.output
    (body,) = master.json_bodies("POST", "/api/v1/tensorboards")
    assert body == {"config": {}, "experimentIds": [3, 4], "trialIds": [9]}
    assert "TensorBoard is running at" in result.output


def test_tensorboard_needs_ids() -> None:
    master = master_with_task([READY])
    result = run_det(master, "tensorboard", "start")
    assert result.exit_code != 0 and "experiment IDs" in result.output


def test_list_and_kill() -> None:
    master = master_with_task([READY])
    master.add("GET", "/api/v1/notebooks", paged("notebooks", [NOTEBOOK]))
    master.add("POST", f"/api/v1/notebooks/{NB_ID}/kill", {"notebook": NOTEBOOK})
    result = run_det(master, "notebook", "list")
    assert result.exit_code == 0 and NB_ID in result.output and "QUEUED" in result.output
    assert master.calls("GET", "/api/v1/notebooks")[0].url.params["users"] == "admin"
    result = run_det(master, "notebook", "kill", NB_ID)
    assert result.exit_code == 0 and f"Killed notebook {NB_ID}" in result.output


@pytest.mark.parametrize(
    ("noun", "plural", "singular"),
    [
        ("notebook", "notebooks", "notebook"),
        ("shell", "shells", "shell"),
        ("tensorboard", "tensorboards", "tensorboard"),
        ("cmd", "commands", "command"),
    ],
)
def test_set_priority(noun: str, plural: str, singular: str) -> None:
    master = FakeMaster(users={"admin": "secret"})
    logged_in(master)
    path = f"/api/v1/{plural}/{NB_ID}/set_priority"
    master.add("POST", path, {singular: NOTEBOOK})
    result = run_det(master, noun, "set", "priority", NB_ID, "7")
    assert result.exit_code == 0, result.output
    assert f"Set priority of {singular} {NB_ID} to 7" in result.output
    assert master.json_bodies("POST", path) == [{"priority": 7}]
    result = run_det(master, noun, "set", "priority", NB_ID, "high")
    assert result.exit_code != 0 and master.json_bodies("POST", path) == [{"priority": 7}]


def test_set_priority_shows_the_masters_refusal() -> None:
    master = FakeMaster(users={"admin": "secret"})
    logged_in(master)
    path = f"/api/v1/notebooks/{NB_ID}/set_priority"
    master.add(
        "POST",
        path,
        lambda _: httpx.Response(
            400, json=error_body(3, "priority must be between 1 and 99 (got 0)")
        ),
    )
    result = run_det(master, "notebook", "set", "priority", NB_ID, "0")
    assert result.exit_code != 0 and "between 1 and 99" in result.output, result.output
