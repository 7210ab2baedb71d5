"""GET /api/v1/tasks/{id}/logs takes the filters of Determined's GetTaskLogs (agentIds,
allocationIds, containerIds, rankIds, stdtypes, sources, levels, timestampBefore/After), as the
trial logs route does: what `det cmd|notebook|tensorboard logs --agent-id …` sends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_trials_api import _trial


def _line(task: str, log: str, **fields: Any) -> dict[str, Any]:
    return {"taskId": task, "log": log, **fields}


async def _messages(master: Master, task: str, params: dict[str, Any]) -> list[str]:
    r = await master.client.get(f"/api/v1/tasks/{task}/logs", params=params, headers=master.user)
    assert r.status_code == 200, r.text
    return [json.loads(x)["result"]["log"] for x in r.text.splitlines() if x.strip()]


@pytest.fixture
async def task_with_logs(master: Master) -> str:
    t = await _trial(master)
    task = t["taskId"]
    lines = [
        _line(task, "a\n", agentId="agent-1", rankId=0, stdtype="stdout",
              timestamp="2026-01-01T00:00:01Z", level="LOG_LEVEL_INFO", containerId="c1"),
        _line(task, "b\n", agentId="agent-2", rankId=1, stdtype="stderr",
              timestamp="2026-01-01T00:00:02Z", level="LOG_LEVEL_ERROR", containerId="c2"),
        _line(task, "c\n", agentId="agent-1", rankId=1, source="agent",
              timestamp="2026-01-01T00:00:03Z", level="LOG_LEVEL_DEBUG"),
    ]  # fmt: skip
    r = await master.client.post("/api/v1/task/logs", json={"logs": lines}, headers=master.user)
    assert r.status_code == 200, r.text
    return task


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, ["a\n", "b\n", "c\n"]),
        ({"agentIds": "agent-1"}, ["a\n", "c\n"]),
        ({"agentIds": ["agent-1", "agent-2"]}, ["a\n", "b\n", "c\n"]),
        ({"rankIds": 1}, ["b\n", "c\n"]),
        ({"containerIds": "c2"}, ["b\n"]),
        ({"stdtypes": "stderr"}, ["b\n"]),
        ({"sources": "agent"}, ["c\n"]),
        ({"levels": ["LOG_LEVEL_ERROR", "LOG_LEVEL_CRITICAL"]}, ["b\n"]),
        ({"timestampAfter": "2026-01-01T00:00:01Z"}, ["b\n", "c\n"]),
        ({"timestampBefore": "2026-01-01T00:00:03Z"}, ["a\n", "b\n"]),
        ({"agentIds": "agent-1", "rankIds": 0}, ["a\n"]),
        ({"allocationIds": "no-such-allocation"}, []),
    ],
)
async def test_filters(
    master: Master, task_with_logs: str, params: dict[str, Any], expected: list[str]
) -> None:
    assert await _messages(master, task_with_logs, params) == expected


async def test_allocation_filter_matches_the_lines_allocation(
    master: Master, task_with_logs: str
) -> None:
    r = await master.client.get(f"/api/v1/tasks/{task_with_logs}/logs", headers=master.user)
    allocations = {json.loads(x)["result"].get("allocationId") for x in r.text.splitlines()}
    for allocation in allocations - {None, ""}:
        got = await _messages(master, task_with_logs, {"allocationIds": allocation})
        assert got == ["a\n", "b\n", "c\n"]


async def test_bad_filters(master: Master, task_with_logs: str) -> None:
    path = f"/api/v1/tasks/{task_with_logs}/logs"
    for params, status in (
        ({"rankIds": 2**40}, 400),
        ({"rankIds": "x"}, 400),
        ({"timestampAfter": "yesterday"}, 400),
        ({"timestampBefore": "2026-01-01T00:00:00"}, 400),  # no zone
        ({"agentIds": "a\x00b"}, 400),
        ({"allocationIds": "a\x00b"}, 400),
    ):
        r = await master.client.get(path, params=params, headers=master.user)
        assert r.status_code == status, (params, r.text)
    assert (await master.client.get(path, params={"agentIds": "agent-1"})).status_code == 401
    r = await master.client.get("/api/v1/tasks/nope/logs", params={"agentIds": "a"},
                                headers=master.user)  # fmt: skip
    assert_error(r, 404)
