"""Log retention per experiment and trial (`det e|t set log-retention`): the owner or an admin
sets it, another user may not, the trial page reads the days left, bad days are a 400."""

from __future__ import annotations

import asyncio

from tests.conftest import Master
from tests.controlplane.services.scheduling.conftest import experiment_yaml


async def _experiment_with_trial(master: Master) -> tuple[int, int]:
    r = await master.client.post(
        "/api/v1/experiments", headers=master.user, json={"config": experiment_yaml("r")}
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]["id"]
    for _ in range(100):
        r = await master.client.get(f"/api/v1/experiments/{exp}/trials", headers=master.user)
        if r.json()["trials"]:
            return exp, r.json()["trials"][0]["id"]
        await asyncio.sleep(0.1)
    raise AssertionError("the experiment made no trial")


async def _left(master: Master, trial: int) -> int:
    r = await master.client.get(
        f"/api/v1/trials/{trial}/remaining_log_retention_days", headers=master.user
    )
    assert r.status_code == 200, r.text
    return r.json()["remainingDays"]


async def test_owner_sets_retention_and_the_trial_page_reads_it(master: Master) -> None:
    exp, trial = await _experiment_with_trial(master)
    assert await _left(master, trial) == -1  # the test master keeps logs forever
    r = await master.client.put(
        f"/api/v1/experiments/{exp}/retain_logs",
        headers=master.user,
        json={"experimentId": exp, "numDays": 7},
    )
    assert r.status_code == 200, r.text
    assert await _left(master, trial) == 7  # still running: the whole count
    r = await master.client.put(
        f"/api/v1/trials/{trial}/retain_logs", headers=master.admin, json={"numDays": -1}
    )
    assert r.status_code == 200, r.text
    assert await _left(master, trial) == -1
    r = await master.client.put(
        "/api/v1/projects/1/experiments/retain_logs",
        headers=master.user,
        json={"experimentIds": [exp], "numDays": 3},
    )
    assert r.status_code == 200 and r.json()["results"] == [{"error": "", "id": exp}], r.text
    assert await _left(master, trial) == 3


async def test_others_and_bad_days_are_refused(master: Master) -> None:
    exp, trial = await _experiment_with_trial(master)
    r = await master.client.post(
        "/api/v1/experiments",
        headers=master.admin,
        json={"config": experiment_yaml("a"), "activate": False},
    )
    eve_exp = r.json()["experiment"]["id"]  # the admin's: not the user's to change
    r = await master.client.put(
        f"/api/v1/experiments/{eve_exp}/retain_logs", headers=master.user, json={"numDays": 1}
    )
    assert r.status_code == 403
    r = await master.client.put(
        "/api/v1/projects/1/experiments/retain_logs",
        headers=master.user,
        json={"experimentIds": [eve_exp], "numDays": 1},
    )
    assert "owner" in r.json()["results"][0]["error"]
    for body in ({"numDays": -2}, {"numDays": 32768}, {"numDays": "x"}, {}, {"numDays": 1,
                 "experimentId": exp + 1}):  # fmt: skip
        r = await master.client.put(
            f"/api/v1/experiments/{exp}/retain_logs", headers=master.user, json=body
        )
        assert r.status_code == 400, (body, r.text)
    r = await master.client.put(
        "/api/v1/trials/987654/retain_logs", headers=master.user, json={"numDays": 1}
    )
    assert r.status_code == 404
    r = await master.client.get(
        "/api/v1/trials/987654/remaining_log_retention_days", headers=master.user
    )
    assert r.status_code == 404
    r = await master.client.put(f"/api/v1/trials/{trial}/retain_logs", json={"numDays": 1})
    assert r.status_code == 401
