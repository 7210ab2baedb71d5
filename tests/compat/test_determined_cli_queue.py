"""Level 3: the real `det` 0.38.1 job, agent and slot commands against our master (wire §6 L3).

A fake agent (tests.support.fake_agent) dials the master subprocess's WebSocket, so the
queue has a running job and jobs waiting behind it. The real client runs in a worker
thread while the agent keeps talking to the master on the test's event loop.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.compat.conftest import RunningMaster, run
from tests.compat.test_determined_cli import CONFIG, Det
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually

pytestmark = [pytest.mark.compat, pytest.mark.slow]


@pytest.fixture(scope="module")
def det(det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory):
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


@pytest.fixture
async def agents(running_master: RunningMaster) -> AsyncIterator[list[FakeAgent]]:
    made: list[FakeAgent] = []
    yield made
    for agent in made:
        await agent.close()


async def connect(master: RunningMaster, made: list[FakeAgent], agent_id: str, slots: int):
    agent = FakeAgent(master.url.replace("http://", "ws://", 1), agent_id, slots)
    made.append(agent)
    await agent.connect()
    assert agent.shutdown is None, agent.shutdown
    return agent


async def job_queue(master: RunningMaster, admin: dict[str, str]) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=master.url, headers=admin, timeout=30) as http:
        reply = await http.get("/api/v1/job-queues-v2")
    assert reply.status_code == 200, reply.text
    return [j["full"] for j in reply.json()["jobs"]]


def _rows(out: str) -> list[list[str]]:
    """The rows of the real client's `a | b | c` tables, cells stripped."""
    return [[c.strip() for c in line.split("|")] for line in out.splitlines() if " | " in line]


async def test_job_list_and_update(
    det: Det,
    running_master: RunningMaster,
    admin: dict[str, str],
    agents: list[FakeAgent],
    tmp_path: Path,
) -> None:
    agent = await connect(running_master, agents, "q1", 1)
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "train.py").write_text('print("hi")\n')
    (tmp_path / "exp.yaml").write_text(CONFIG)
    ids = []
    for _ in range(3):
        _, out = await run(
            det, "experiment", "create", str(tmp_path / "exp.yaml"), str(tmp_path / "ctx")
        )
        ids.append(re.search(r"Created experiment (\d+)", out).group(1))  # type: ignore[union-attr]

    async def queued() -> list[dict[str, Any]]:
        jobs = await job_queue(running_master, admin)
        mine = [j for j in jobs if j["entityId"] in ids]
        return mine if len(mine) == 3 and agent.allocations() else []

    jobs = await eventually(queued, timeout=20)
    first, second, third = jobs

    _, out = await run(det, "job", "list")
    header, *rows = _rows(out)
    assert header == [
        "#", "ID", "Type", "Job Name", "Priority", "Submitted", "Slots (acquired/needed)",
        "State", "User",
    ]  # fmt: skip
    by_id = {row[1]: row for row in rows}
    assert by_id[first["jobId"]][2:4] == ["TYPE_EXPERIMENT", f"l1 ({ids[0]})"]
    assert by_id[first["jobId"]][4] == "42"
    assert by_id[first["jobId"]][6:9] == ["1/1", "STATE_SCHEDULED", "admin"]
    assert by_id[third["jobId"]][6:9] == ["0/1", "STATE_QUEUED", "admin"]
    assert [row[1] for row in rows].index(second["jobId"]) < [row[1] for row in rows].index(
        third["jobId"]
    )

    _, out = await run(det, "job", "update", third["jobId"], "--priority", "5")

    async def third_first() -> bool:
        listed = await job_queue(running_master, admin)
        return listed[0]["jobId"] == third["jobId"] and listed[0]["priority"] == 5

    await eventually(third_first, timeout=10)
    _, out = await run(det, "job", "list", "--json")
    listed = json.loads(out)["jobs"]
    assert listed[0]["jobId"] == third["jobId"] and listed[0]["priority"] == 5
    assert listed[0]["summary"] == {"jobsAhead": 0, "state": "STATE_QUEUED"}

    await run(det, "job", "update", second["jobId"], "--weight", "2")
    _, out = await run(det, "job", "list", "--json")
    weights = {j["jobId"]: j["weight"] for j in json.loads(out)["jobs"]}
    assert weights[second["jobId"]] == 2.0

    code, out = await run(det, "job", "update", "no-such-job", "--priority", "5", ok=False)
    assert code != 0 and "job no-such-job not found" in out
    for exp_id in ids:
        await run(det, "experiment", "kill", exp_id)


async def _agent_row(det: Det, agent_id: str) -> dict[str, Any]:
    _, out = await run(det, "agent", "list", "--json")
    return next(a for a in json.loads(out) if a["id"] == agent_id)


async def test_agent_list_disable_enable(
    det: Det, running_master: RunningMaster, agents: list[FakeAgent]
) -> None:
    await connect(running_master, agents, "a1", 2)
    _, out = await run(det, "agent", "list")
    header, *rows = _rows(out)
    assert header[:4] == ["Agent ID", "Version", "Registered Time", "Slots"]
    row = next(r for r in rows if r[0] == "a1")
    assert row[1] == "test" and row[3] == "2" and row[5:8] == ["default", "True", "False"]

    _, out = await run(det, "agent", "disable", "a1")
    assert "Disabled agent a1." in out
    assert (await _agent_row(det, "a1"))["enabled"] is False
    _, out = await run(det, "agent", "enable", "a1")
    assert "Enabled agent a1." in out
    agent = await _agent_row(det, "a1")
    assert (agent["enabled"], agent["draining"]) == (True, False)


async def test_agent_disable_drain(
    det: Det, running_master: RunningMaster, agents: list[FakeAgent]
) -> None:
    fake = await connect(running_master, agents, "a2", 1)
    _, out = await run(det, "agent", "disable", "--drain", "a2")
    assert "Disabled agent a2." in out
    assert "No tasks in progress on draining nodes." in out
    agent = await _agent_row(det, "a2")
    assert (agent["enabled"], agent["draining"]) == (False, True)
    await run(det, "agent", "enable", "a2")

    # With a command running on it, the drain lists that task (read from GET /api/v1/tasks).
    task_id = await _running_command(det, fake)
    _, out = await run(det, "agent", "disable", "--drain", "a2")
    assert "Tasks still in progress on draining nodes." in out
    assert task_id in out and "Command (" in out
    await run(det, "agent", "enable", "a2")
    await run(det, "cmd", "kill", task_id)


async def test_slot_list(det: Det, running_master: RunningMaster, agents: list[FakeAgent]) -> None:
    fake = await connect(running_master, agents, "a3", 2)
    task_id = await _running_command(det, fake)
    (start,) = [s for s in fake.started.values() if s.spec.task_id == task_id]
    _, out = await run(det, "slot", "list")
    rows = [r for r in _rows(out) if r[0] == "a3"]
    assert [r[2] for r in rows] == ["0", "1"]
    assert all(r[3:5] == ["True", "False"] and r[7:9] == ["cpu", "fake"] for r in rows)
    # The held slot names its allocation and task (container id -> GET /api/v1/tasks).
    held = {r[2]: r[5:7] for r in rows}
    (device,) = start.container.devices
    assert held[str(device.id)][0] == start.spec.allocation_id
    assert held[str(device.id)][1].startswith("Command (")
    assert held[str(1 - device.id)] == ["FREE", "FREE"]
    await run(det, "cmd", "kill", task_id)


async def _running_command(det: Det, agent: FakeAgent) -> str:
    """`det cmd run --detach sleep 100` placed on `agent` (the only schedulable one)."""
    _, out = await run(det, "cmd", "run", "--detach", "sleep", "100")
    task_id = out.strip().splitlines()[-1]

    async def placed() -> bool:
        return any(s.spec.task_id == task_id for s in agent.started.values())

    await eventually(placed, timeout=20)
    return task_id
