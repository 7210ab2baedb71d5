"""Every task's TaskSpec names the Unix user it runs as, on a live master with a fake agent:
its owner's linked agent user, else security.default_task_user (per user by default; one
shared user when configured); never root unless linked. Both databases."""

from __future__ import annotations

from typing import Any

import pytest

from agent.protocol import StartContainer, TaskUser
from tests.conftest import PASSWORD
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster, eventually

pytestmark = pytest.mark.slow


async def _new_user(m: LiveMaster, name: str) -> tuple[int, dict[str, str]]:
    body = {"user": {"username": name, "active": True}, "password": PASSWORD}
    user = (await m.post("/api/v1/users", body))["user"]
    return user["id"], await m.login(name, PASSWORD)


async def _run(m: LiveMaster, agent: FakeAgent, headers: dict[str, str]) -> StartContainer:
    body: dict[str, Any] = {"config": {"entrypoint": ["true"], "resources": {"slots": 0}}}
    r = await m.http.post("/api/v1/commands", json=body, headers=headers)
    assert r.status_code == 200, r.text
    task_id = r.json()["command"]["id"]

    async def found() -> StartContainer | None:
        return next((s for s in agent.started.values() if s.spec.task_id == task_id), None)

    start = await eventually(found, timeout=15)
    await agent.exit(start.container.id, 0)
    return start


async def test_tasks_carry_their_owners_unix_user(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = FakeAgent(m.ws_url, "u1", 1)
    agents.append(agent)
    await agent.connect()
    alice_id, alice = await _new_user(m, "alice")
    bob_id, bob = await _new_user(m, "bob")
    link = {"agentUid": 61001, "agentGid": 61000, "agentUser": "alice", "agentGroup": "ml"}
    r = await m.http.patch(
        f"/api/v1/users/{alice_id}", json={"agentUserGroup": link}, headers=m.admin
    )
    assert r.status_code == 200, r.text

    assert (await _run(m, agent, alice)).spec.user == TaskUser(
        uid=61001, gid=61000, user="alice", group="ml", owner="alice"
    )
    name = f"det-user-{bob_id}"
    assert (await _run(m, agent, bob)).spec.user == TaskUser(
        uid=70000 + bob_id, gid=70000 + bob_id, user=name, group=name, owner="bob"
    )
    admin = (await _run(m, agent, m.admin)).spec.user
    assert admin is not None and admin.owner == "admin" and admin.uid not in (0, 70000 + bob_id)


async def test_a_shared_default(
    start_master: StartMaster, agents: list[FakeAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = '{"per_user": false, "uid": 65000, "gid": 65001, "user": "tasks", "group": "tasks"}'
    monkeypatch.setenv("DET_SECURITY_DEFAULT_TASK_USER", shared)
    m = await start_master()
    agent = FakeAgent(m.ws_url, "u1", 1)
    agents.append(agent)
    await agent.connect()
    _, bob = await _new_user(m, "bob")
    for headers, owner in ((bob, "bob"), (m.admin, "admin")):
        assert (await _run(m, agent, headers)).spec.user == TaskUser(
            uid=65000, gid=65001, user="tasks", group="tasks", owner=owner
        )
