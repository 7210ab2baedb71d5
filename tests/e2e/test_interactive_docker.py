"""A notebook on the docker runtime (`det deploy local` with docker agents): JupyterLab runs in
the test image (the host's Python mounted read-only), is reached through the master's proxy, and
is killed with its container."""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import Deploy, docker_image_config

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
