"""The log filters' values (TaskLogsFields, TrialLogsFields): the distinct agents, containers,
ranks, stdtypes and sources of a task's logs; with follow, a line per change until the trial
ends; unknown ids are a 404."""

from __future__ import annotations

import json

from tests.conftest import Master
from tests.controlplane.api.test_trials_api import _trial


async def test_trial_and_task_log_fields(master: Master) -> None:
    t = await _trial(master)
    lines = [
        {
            "taskId": t["taskId"],
            "log": "a\n",
            "agentId": "agent-1",
            "rankId": 0,
            "stdtype": "stdout",
        },
        {
            "taskId": t["taskId"],
            "log": "b\n",
            "agentId": "agent-2",
            "rankId": 1,
            "stdtype": "stderr",
        },
        {"taskId": t["taskId"], "log": "c\n", "agentId": "agent-1", "rankId": 1, "source": "agent"},
    ]
    r = await master.client.post("/api/v1/task/logs", json={"logs": lines}, headers=master.user)
    assert r.status_code == 200, r.text
    r = await master.client.get(f"/api/v1/trials/{t['id']}/logs/fields", headers=master.user)
    assert r.status_code == 200, r.text
    (line,) = r.text.splitlines()
    fields = json.loads(line)["result"]
    assert fields["agentIds"] == ["agent-1", "agent-2"]
    assert fields["rankIds"] == [0, 1]
    assert fields["stdtypes"] == ["stderr", "stdout"]
    assert fields["sources"] == ["agent"]
    assert "allocationIds" not in fields
    r = await master.client.get(f"/api/v1/tasks/{t['taskId']}/logs/fields", headers=master.user)
    assert json.loads(r.text.splitlines()[0])["result"]["agentIds"] == ["agent-1", "agent-2"]
    # follow on an ended trial: what is there, then the stream ends
    await master.client.post(f"/api/v1/experiments/{t['experimentId']}/kill", headers=master.user)
    r = await master.client.get(
        f"/api/v1/trials/{t['id']}/logs/fields", params={"follow": "true"}, headers=master.user
    )
    assert len(r.text.splitlines()) == 1


async def test_unknown_ids_and_callers(master: Master) -> None:
    assert (
        await master.client.get("/api/v1/trials/987654/logs/fields", headers=master.user)
    ).status_code == 404
    assert (
        await master.client.get("/api/v1/tasks/nope/logs/fields", headers=master.user)
    ).status_code == 404
    assert (
        await master.client.get("/api/v1/trials/99999999999/logs/fields", headers=master.user)
    ).status_code == 400
    assert (await master.client.get("/api/v1/tasks/x/logs/fields")).status_code == 401
