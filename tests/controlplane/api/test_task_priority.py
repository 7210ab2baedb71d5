"""`POST /api/v1/{commands|notebooks|shells|tensorboards}/{id}/set_priority`: the task's job takes
the new priority (the job queue shows it, the config follows); bad input is a clear 4xx and
changes nothing. Both databases."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from controlplane.db.models import Job, Task
from controlplane.db.session import make_engine
from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_smoke_flow import CONFIG


async def _queued(m: Master, plural: str) -> str:
    if plural == "commands":
        body: dict[str, Any] = {"config": {"entrypoint": ["true"], "resources": {"slots": 0}}}
    else:
        body = {"config": {"resources": {"slots": 0}}}
    if plural == "tensorboards":
        exp = await m.client.post("/api/v1/experiments", json={"config": CONFIG}, headers=m.user)
        assert exp.status_code == 200, exp.text
        body["experimentIds"] = [exp.json()["experiment"]["id"]]
    r = await m.client.post(f"/api/v1/{plural}", json=body, headers=m.user)
    assert r.status_code == 200, r.text
    return str(r.json()[plural.removesuffix("s")]["id"])


async def _job_priority(m: Master, db_url: str, task_id: str, plural: str) -> tuple[int, int]:
    """(the job's priority as the scheduler reads it, the one `det ... config` shows)"""
    engine = make_engine(db_url)
    try:
        async with engine.connect() as conn:
            query = select(Job.priority).join(Task, Task.job_id == Job.job_id)
            job_priority = (await conn.execute(query.where(Task.task_id == task_id))).scalar_one()
    finally:
        await engine.dispose()
    described = await m.client.get(f"/api/v1/{plural}/{task_id}", headers=m.user)
    return job_priority, described.json()["config"]["resources"]["priority"]


@pytest.mark.parametrize("plural", ["commands", "notebooks", "shells", "tensorboards"])
async def test_set_priority(master: Master, db_url: str, plural: str) -> None:
    m = master
    task_id = await _queued(m, plural)
    before = await _job_priority(m, db_url, task_id, plural)
    assert before[0] != 7
    url = f"/api/v1/{plural}/{task_id}/set_priority"
    r = await m.client.post(url, json={"priority": 7}, headers=m.user)
    assert r.status_code == 200, r.text
    assert r.json()[plural.removesuffix("s")]["id"] == task_id
    assert await _job_priority(m, db_url, task_id, plural) == (7, 7)

    for body, needle in (
        ({"priority": 0}, "between 1 and 99"),
        ({"priority": 100}, "between 1 and 99"),
        ({"priority": "high"}, "priority"),
        ({"priority": 2**31}, "priority"),
    ):
        assert_error(await m.client.post(url, json=body, headers=m.user), 400, needle)
    assert await _job_priority(m, db_url, task_id, plural) == (7, 7)
    r = await m.client.post(f"/api/v1/{plural}/no-such-task/set_priority", json={"priority": 5})
    assert_error(r, 401)
    r = await m.client.post(
        f"/api/v1/{plural}/no-such-task/set_priority", json={"priority": 5}, headers=m.user
    )
    assert_error(r, 404, "not found")

    killed = await m.client.post(f"/api/v1/{plural}/{task_id}/kill", headers=m.user)
    assert killed.status_code == 200, killed.text
    assert_error(await m.client.post(url, json={"priority": 5}, headers=m.user), 400, "ended")


async def test_a_command_is_not_a_notebook(master: Master) -> None:
    cmd = await _queued(master, "commands")
    r = await master.client.post(
        f"/api/v1/notebooks/{cmd}/set_priority", json={"priority": 5}, headers=master.user
    )
    assert_error(r, 404, "notebook")
