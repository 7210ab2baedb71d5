"""Generic tasks over the API (/api/v1/generic-tasks, /api/v1/tasks/{id}/config|kill|pause|
unpause) with Determined's fixtures (tests/fixtures/determined/generic_task): create, config,
fork, pause and unpause while queued, kill of a tree; other users, unknown ids and bad input.
Both databases. Running tasks are paused and killed in tests/compat (a fake agent)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error, is_postgres

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "determined" / "generic_task"


def _context() -> list[dict[str, Any]]:
    return [
        {"path": p.name, "type": 48, "content": base64.b64encode(p.read_bytes()).decode(),
         "mtime": 0, "uid": 0, "gid": 0, "mode": 0o644}
        for p in sorted(FIXTURES.glob("*.py"))
    ]  # fmt: skip


async def _create(m: Master, headers: dict[str, str], **body: Any) -> str:
    req = {"config": (FIXTURES / "test_config.yaml").read_text(), "contextDirectory": _context()}
    r = await m.client.post("/api/v1/generic-tasks", json={**req, **body}, headers=headers)
    assert r.status_code == 200, r.text
    return str(r.json()["taskId"])


async def _config(m: Master, task_id: str) -> dict[str, Any]:
    r = await m.client.get(f"/api/v1/tasks/{task_id}/config", headers=m.user)
    assert r.status_code == 200, r.text
    return json.loads(r.json()["config"])


async def _state(m: Master, task_id: str) -> str:
    r = await m.client.get(f"/api/v1/tasks/{task_id}", headers=m.user)
    assert r.status_code == 200, r.text
    assert r.json()["task"]["taskType"] == "TASK_TYPE_GENERIC"
    return str(r.json()["task"].get("taskState"))


async def test_create_config_and_fork(master: Master) -> None:
    m = master
    task = await _create(m, m.user, config=(FIXTURES / "test_config.yaml").read_text())
    assert await _config(m, task) == {"entrypoint": ["echo", "task ran"]}
    fork_text = (FIXTURES / "test_config_fork.yaml").read_text()
    fork = await _create(m, m.user, config=fork_text, forkedFrom=task)
    assert await _config(m, fork) == {"entrypoint": ["echo", "forked"]}
    # `det task fork`: no config and no files; the source's config and context are taken.
    r = await m.client.post(
        "/api/v1/generic-tasks",
        json={"config": "", "contextDirectory": [], "forkedFrom": task},
        headers=m.user,
    )
    assert r.status_code == 200, r.text
    bare = r.json()["taskId"]
    assert await _config(m, bare) == {"entrypoint": ["echo", "task ran"]}
    r = await m.client.get(f"/api/v1/tasks/{bare}/context_directory", headers=m.user)
    assert r.status_code == 200 and r.json()["b64Tgz"], r.text
    assert await _state(m, task) == "GENERIC_TASK_STATE_ACTIVE"
    r = await m.client.get("/api/v1/job-queues-v2", headers=m.user)
    assert r.status_code == 200, r.text
    types = {j["full"]["jobId"]: j["full"]["type"] for j in r.json()["jobs"]}
    assert set(types.values()) == {"TYPE_GENERIC"} and len(types) == 3


async def test_pause_and_unpause_while_queued(master: Master) -> None:
    m = master
    task = await _create(m, m.user, config=(FIXTURES / "test_config_pause.yaml").read_text())
    for _ in range(2):  # idempotent
        r = await m.client.post(f"/api/v1/tasks/{task}/pause", headers=m.user)
        assert r.status_code == 200, r.text
        assert await _state(m, task) == "GENERIC_TASK_STATE_PAUSED"
    for _ in range(2):
        r = await m.client.post(f"/api/v1/tasks/{task}/unpause", headers=m.user)
        assert r.status_code == 200, r.text
        assert await _state(m, task) == "GENERIC_TASK_STATE_ACTIVE"
    unpausable = await _create(m, m.user, noPause=True)
    r = await m.client.post(f"/api/v1/tasks/{unpausable}/pause", headers=m.user)
    assert_error(r, 409, "noPause")


async def test_kill_reaches_the_subtree_or_the_whole_tree(master: Master) -> None:
    m = master
    root = await _create(m, m.user)
    child = await _create(m, m.user, parentId=root, inheritContext=True)
    grandchild = await _create(m, m.user, parentId=child)
    sibling = await _create(m, m.user, parentId=root)
    r = await m.client.post(f"/api/v1/tasks/{root}/pause", headers=m.user)
    assert r.status_code == 200, r.text
    for task in (root, child, grandchild, sibling):  # a pause reaches the subtree
        assert await _state(m, task) == "GENERIC_TASK_STATE_PAUSED"
    r = await m.client.post(f"/api/v1/tasks/{child}/kill", json={"taskId": child}, headers=m.user)
    assert r.status_code == 200, r.text
    assert await _state(m, child) == "GENERIC_TASK_STATE_CANCELED"
    assert await _state(m, grandchild) == "GENERIC_TASK_STATE_CANCELED"
    assert await _state(m, sibling) == "GENERIC_TASK_STATE_PAUSED"
    r = await m.client.post(
        f"/api/v1/tasks/{sibling}/kill", json={"taskId": sibling, "killFromRoot": True},
        headers=m.user,
    )  # fmt: skip
    assert r.status_code == 200, r.text
    for task in (root, sibling):
        assert await _state(m, task) == "GENERIC_TASK_STATE_CANCELED"
    r = await m.client.post(f"/api/v1/tasks/{root}/unpause", headers=m.user)
    assert_error(r, 409, "only a paused task")


async def test_other_users_admins_and_strangers(master: Master) -> None:
    m = master
    task = await _create(m, m.admin)
    for verb in ("pause", "unpause", "kill"):
        assert_error(await m.client.post(f"/api/v1/tasks/{task}/{verb}", headers=m.user), 403)
        assert_error(await m.client.post(f"/api/v1/tasks/{task}/{verb}"), 401)
    assert_error(await m.client.get(f"/api/v1/tasks/{task}/config"), 401)
    mine = await _create(m, m.user)
    r = await m.client.post(f"/api/v1/tasks/{mine}/pause", headers=m.admin)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("verb", ["pause", "unpause", "kill"])
async def test_unknown_and_hostile_ids(master: Master, db_url: str, verb: str) -> None:
    m = master
    # PostgreSQL refuses a NUL in text: the master's one answer for that is a 400.
    nul = 400 if is_postgres(db_url) else 404
    for bad, status in (("no-such-task", 404), ("x" * 128, 404), ("nul%00byte", nul)):
        r = await m.client.post(f"/api/v1/tasks/{bad}/{verb}", headers=m.user)
        assert_error(r, status)
        assert_error(await m.client.get(f"/api/v1/tasks/{bad}/config", headers=m.user), status)
    r = await m.client.post(f"/api/v1/tasks/{'x' * 129}/{verb}", headers=m.user)
    assert_error(r, 400)
    # A command is not a generic task.
    r = await m.client.post(
        "/api/v1/commands",
        json={"config": {"entrypoint": ["true"], "resources": {"slots": 0}}},
        headers=m.user,
    )
    cmd = r.json()["command"]["id"]
    assert_error(await m.client.post(f"/api/v1/tasks/{cmd}/{verb}", headers=m.user), 404)


async def test_bad_bodies(master: Master) -> None:
    m = master
    url = "/api/v1/generic-tasks"
    for body, status, needle in (
        ({"config": "entrypoint: [true]\nnot_a_key: 1\n", "contextDirectory": []}, 400, ""),
        ({"config": "- a list\n", "contextDirectory": []}, 400, ""),
        ({"config": 5, "contextDirectory": []}, 400, "config"),
        ({"config": "entrypoint: [a\x00b]", "contextDirectory": []}, 400, ""),
        ({"config": "", "contextDirectory": [], "forkedFrom": "nope"}, 404, "not found"),
        ({"config": "", "contextDirectory": [], "parentId": "nope"}, 404, "not found"),
        ({"config": "entrypoint: [true]", "contextDirectory": [], "projectId": 2**31 - 1}, 404, ""),
        ({"config": "entrypoint: [true]", "contextDirectory": [], "projectId": "x"}, 400, ""),
        ({"config": "entrypoint: [true]", "contextDirectory": [], "inheritContext": True}, 400,
         "parentId"),
    ):  # fmt: skip
        assert_error(await m.client.post(url, json=body, headers=m.user), status, needle)


async def test_pause_and_unpause_reach_the_subtree_but_not_no_pause_children(
    master: Master,
) -> None:
    m = master
    root = await _create(m, m.user)
    child = await _create(m, m.user, parentId=root)
    stubborn = await _create(m, m.user, parentId=root, noPause=True)
    r = await m.client.post(f"/api/v1/tasks/{root}/pause", headers=m.user)
    assert r.status_code == 200, r.text
    assert await _state(m, child) == "GENERIC_TASK_STATE_PAUSED"
    assert await _state(m, stubborn) == "GENERIC_TASK_STATE_ACTIVE"
    r = await m.client.post(f"/api/v1/tasks/{root}/unpause", headers=m.user)
    assert r.status_code == 200, r.text
    for task in (root, child, stubborn):
        assert await _state(m, task) == "GENERIC_TASK_STATE_ACTIVE"
