"""Detached (unmanaged) runs over the API: put an experiment and trials by external ids, start
and patch a trial, ship its logs; owners, other users, admins, strangers, task tokens and bad
input. Both databases. The real client's core_v2 runs in tests/compat."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_smoke_flow import CONFIG

DETACHED = "name: detached\nsearcher: {name: single, metric: unmanaged, max_length: 100}\n"


async def _put_experiment(m: Master, headers: dict[str, str], external: str) -> dict[str, Any]:
    r = await m.client.put(
        f"/api/v1/experiments/by-external-id/{external}",
        json={"config": DETACHED, "unmanaged": True},
        headers=headers,
    )
    assert r.status_code == 200, r.text
    return r.json()["experiment"]


async def _put_trial(m: Master, exp_id: int, external: str, **extra: Any) -> dict[str, Any]:
    body = {"createTrialRequest": {"experimentId": exp_id, "unmanaged": True, **extra},
            "externalTrialId": external}  # fmt: skip
    r = await m.client.put("/api/v1/trials", json=body, headers=m.user)
    assert r.status_code == 200, r.text
    return r.json()["trial"]


async def _patch(m: Master, trial_id: int, state: str | None) -> dict[str, Any]:
    body = {"trialId": trial_id} if state is None else {"trialId": trial_id, "state": state}
    r = await m.client.patch(f"/api/v1/trials/{trial_id}", json=body, headers=m.user)
    assert r.status_code == 200, r.text
    return r.json()["trial"]


async def _experiment(m: Master, exp_id: int) -> dict[str, Any]:
    r = await m.client.get(f"/api/v1/experiments/{exp_id}", headers=m.user)
    assert r.status_code == 200, r.text
    return r.json()["experiment"]


async def test_put_is_idempotent_and_trials_follow_external_ids(master: Master) -> None:
    m = master
    exp = await _put_experiment(m, m.user, "sweep-1")
    assert exp["unmanaged"] is True and exp["externalExperimentId"] == "sweep-1"
    assert (await _put_experiment(m, m.user, "sweep-1"))["id"] == exp["id"]
    assert (await _put_experiment(m, m.user, "sweep-2"))["id"] != exp["id"]
    a = await _put_trial(m, exp["id"], "a", hparams={"lr": 0.1})
    assert a["state"] == "STATE_PAUSED" and a["hparams"] == {"lr": 0.1}
    assert a["taskId"] == f"{exp['id']}.a"
    assert (await _put_trial(m, exp["id"], "a"))["id"] == a["id"]
    b = await _put_trial(m, exp["id"], "b" * 255)  # too long for a task id of its own
    assert b["id"] != a["id"] and len(b["taskId"]) <= 128
    r = await m.client.post(
        "/api/v1/trials", json={"experimentId": exp["id"], "unmanaged": True}, headers=m.user
    )
    assert r.status_code == 200, r.text
    trials = (await m.client.get(f"/api/v1/experiments/{exp['id']}/trials", headers=m.user)).json()
    assert len(trials["trials"]) == 3
    # GetTrialByExternalID: anyone who may view the experiment.
    for headers in (m.user, m.admin):
        r = await m.client.get("/api/v1/trials/by-external-id/sweep-1/a", headers=headers)
        assert r.status_code == 200 and r.json()["trial"]["id"] == a["id"], r.text
    for path in ("sweep-1/nope", "sweep-2/a", "nope/a"):
        r = await m.client.get(f"/api/v1/trials/by-external-id/{path}", headers=m.user)
        assert_error(r, 404, "no trial")
    assert_error(await m.client.get("/api/v1/trials/by-external-id/sweep-1/a"), 401)


async def test_start_patch_and_the_experiment_state(master: Master) -> None:
    m = master
    exp = await _put_experiment(m, m.user, "states")
    trial = await _put_trial(m, exp["id"], "a")
    url = f"/api/v1/trials/{trial['id']}/start"
    first = await m.client.post(url, json={"trialId": trial["id"], "resume": True}, headers=m.user)
    assert first.status_code == 200, first.text
    assert first.json()["stepsCompleted"] == 0 and first.json().get("latestCheckpoint") is None
    second = await m.client.post(url, json={"trialId": trial["id"]}, headers=m.user)
    assert second.json()["trialRunId"] == first.json()["trialRunId"] + 1

    assert (await _patch(m, trial["id"], None))["state"] == "STATE_PAUSED"  # a heartbeat
    assert (await _patch(m, trial["id"], "STATE_RUNNING"))["state"] == "STATE_ACTIVE"
    running = await _experiment(m, exp["id"])
    # A detached run has no allocations: it is shown ACTIVE, not QUEUED behind nothing.
    assert running["endTime"] is None and running["state"] == "STATE_ACTIVE"
    done = await _patch(m, trial["id"], "STATE_COMPLETED")
    assert done["state"] == "STATE_COMPLETED" and done["endTime"]
    ended = await _experiment(m, exp["id"])
    assert ended["state"] == "STATE_COMPLETED" and ended["endTime"]
    # Resumed: running again, and the experiment with it.
    await _patch(m, trial["id"], "STATE_RUNNING")
    assert (await _experiment(m, exp["id"]))["endTime"] is None
    other = await _put_trial(m, exp["id"], "b")
    await _patch(m, other["id"], "STATE_RUNNING")
    await _patch(m, other["id"], "STATE_ERROR")
    await _patch(m, trial["id"], "STATE_COMPLETED")
    assert (await _experiment(m, exp["id"]))["state"] == "STATE_COMPLETED"
    r = await m.client.patch(
        f"/api/v1/trials/{trial['id']}", json={"state": "STATE_ERROR"}, headers=m.user
    )
    assert_error(r, 409, "cannot move")
    r = await m.client.patch(
        f"/api/v1/trials/{trial['id']}", json={"state": "STATE_STOPPING_KILLED"}, headers=m.user
    )
    assert_error(r, 400, "cannot report")


async def test_logs_reach_the_trials_task(master: Master) -> None:
    m = master
    exp = await _put_experiment(m, m.user, "logs")
    trial = await _put_trial(m, exp["id"], "a")
    lines = [{"task_id": trial["taskId"], "timestamp": "2026-12-07T00:00:00Z", "rank": "0",
              "log": f"line {i}\n"} for i in range(3)]  # fmt: skip
    r = await m.client.post("/task-logs", json=lines, headers=m.user)
    assert r.status_code == 200, r.text
    r = await m.client.get(f"/api/v1/tasks/{trial['taskId']}/logs", headers=m.user)
    assert [x for x in r.text.splitlines() if "line " in x] and "line 2" in r.text
    r = await m.client.get(f"/api/v1/trials/{trial['id']}/logs", headers=m.user)
    assert r.status_code == 200 and "line 2" in r.text, r.text
    r = await m.client.post("/task-logs", json=lines, headers=m.admin)
    assert r.status_code == 200, r.text


async def test_managed_experiments_and_trials_are_not_touched(master: Master) -> None:
    m = master
    r = await m.client.post("/api/v1/experiments", json={"config": CONFIG}, headers=m.user)
    assert r.status_code == 200, r.text
    exp_id = r.json()["experiment"]["id"]
    trials = (await m.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=m.user)).json()
    managed = trials["trials"][0]["id"]
    r = await m.client.post(
        "/api/v1/trials", json={"experimentId": exp_id, "unmanaged": True}, headers=m.user
    )
    assert_error(r, 409, "unmanaged experiments")
    r = await m.client.patch(
        f"/api/v1/trials/{managed}", json={"state": "STATE_COMPLETED"}, headers=m.user
    )
    assert_error(r, 409, "only unmanaged")
    r = await m.client.post(f"/api/v1/trials/{managed}/start", json={}, headers=m.user)
    assert_error(r, 409, "only unmanaged")
    # A detached run needs no entrypoint; a managed experiment still does.
    r = await m.client.post("/api/v1/experiments", json={"config": DETACHED}, headers=m.user)
    assert_error(r, 400, "entrypoint")
    r = await m.client.put(
        "/api/v1/experiments/by-external-id/x", json={"config": DETACHED}, headers=m.user
    )
    assert_error(r, 400, "unmanaged")


async def test_other_users_strangers_and_admins(master: Master) -> None:
    m = master
    exp = await _put_experiment(m, m.admin, "admins")
    body = {"createTrialRequest": {"experimentId": exp["id"], "unmanaged": True},
            "externalTrialId": "t"}  # fmt: skip
    assert_error(await m.client.put("/api/v1/trials", json=body, headers=m.user), 403)
    assert_error(await m.client.put("/api/v1/trials", json=body), 401)
    r = await m.client.put(
        "/api/v1/experiments/by-external-id/admins",
        json={"config": DETACHED, "unmanaged": True},
        headers=m.user,
    )
    assert_error(r, 403)
    r = await m.client.put("/api/v1/trials", json=body, headers=m.admin)
    trial = r.json()["trial"]
    for method, url, payload in (
        ("PATCH", f"/api/v1/trials/{trial['id']}", {"state": "STATE_RUNNING"}),
        ("POST", f"/api/v1/trials/{trial['id']}/start", {}),
        ("POST", "/task-logs", [{"task_id": trial["taskId"], "log": "x"}]),
    ):
        assert_error(await m.client.request(method, url, json=payload, headers=m.user), 403)
        assert_error(await m.client.request(method, url, json=payload), 401)
    mine = await _put_experiment(m, m.user, "mine")
    r = await m.client.put(
        "/api/v1/trials",
        json={"createTrialRequest": {"experimentId": mine["id"], "unmanaged": True},
              "externalTrialId": "t"},
        headers=m.admin,
    )  # fmt: skip
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("method", "url", "body", "status"),
    [
        ("PUT", "/api/v1/experiments/by-external-id/" + "x" * 256, {"config": "a: 1"}, 400),
        ("PUT", "/api/v1/trials", {"createTrialRequest": {"experimentId": 2**31, "unmanaged": True},
                                   "externalTrialId": "t"}, 400),
        ("PUT", "/api/v1/trials", {"createTrialRequest": {"experimentId": 999999,
                                   "unmanaged": True}, "externalTrialId": "t"}, 404),
        ("PUT", "/api/v1/trials", {"createTrialRequest": {"experimentId": 1, "unmanaged": True},
                                   "externalTrialId": ""}, 400),
        ("PUT", "/api/v1/trials", {"createTrialRequest": {"experimentId": "one"}}, 400),
        ("POST", "/api/v1/trials", {"experimentId": 1}, 400),
        ("POST", "/api/v1/trials", {"experimentId": 1, "unmanaged": True, "hparams": 5}, 400),
        ("PATCH", "/api/v1/trials/999999", {"state": "STATE_RUNNING"}, 404),
        ("PATCH", "/api/v1/trials/0", {}, 400),
        ("POST", "/api/v1/trials/999999/start", {}, 404),
        ("POST", "/task-logs", [{"task_id": "nope", "log": "x"}], 404),
        ("POST", "/task-logs", {"task_id": "nope"}, 400),
        ("POST", "/task-logs", [{"task_id": "x" * 129, "log": "x"}], 400),
    ],
)  # fmt: skip
async def test_bad_input(master: Master, method: str, url: str, body: Any, status: int) -> None:
    r = await master.client.request(method, url, json=body, headers=master.user)
    assert_error(r, status)


async def test_nul_and_control_characters_in_external_ids(master: Master) -> None:
    m = master
    exp = await _put_experiment(m, m.user, "nul")
    for bad in ("a\x00b", "a\nb"):
        body = {"createTrialRequest": {"experimentId": exp["id"], "unmanaged": True},
                "externalTrialId": bad}  # fmt: skip
        assert_error(await m.client.put("/api/v1/trials", json=body, headers=m.user), 400)
    r = await m.client.put(
        "/api/v1/experiments/by-external-id/n%00ul",
        json={"config": DETACHED, "unmanaged": True},
        headers=m.user,
    )
    assert_error(r, 400)
