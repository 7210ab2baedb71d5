"""Runs (Determined 0.38's flat trials view): SearchRuns across a project with the experiment
filter, and the bulk run actions, which act on a multi-trial experiment's run only where the
action is the run's own (kill), refusing the others per run."""

from __future__ import annotations

import asyncio
import json

from tests.conftest import Master
from tests.controlplane.services.scheduling.conftest import experiment_yaml


async def _experiment(master: Master, name: str, trials: int = 1) -> tuple[int, list[int]]:
    r = await master.client.post(
        "/api/v1/experiments", headers=master.user,
        json={"config": experiment_yaml(name, trials=trials)},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]["id"]
    for _ in range(100):
        r = await master.client.get(f"/api/v1/experiments/{exp}/trials", headers=master.user)
        ids = [t["id"] for t in r.json()["trials"]]
        if len(ids) == trials:
            return exp, ids
        await asyncio.sleep(0.1)
    raise AssertionError("trials were not created")


async def test_search_runs(master: Master) -> None:
    single, (run,) = await _experiment(master, "single")
    _, runs = await _experiment(master, "multi", trials=2)
    r = await master.client.post("/api/v1/runs", headers=master.user, json={"projectId": 1})
    assert r.status_code == 200, r.text
    got = r.json()["runs"]
    assert [x["id"] for x in got] == sorted([run, *runs], reverse=True)
    one = next(x for x in got if x["id"] == run)
    assert one["experiment"]["id"] == single and one["experiment"]["isMultitrial"] is False
    assert one["projectName"] and one["workspaceName"] and one["checkpointCount"] == 0
    assert next(x for x in got if x["id"] == runs[0])["experiment"]["isMultitrial"] is True
    flt = {"filterGroup": {"kind": "group", "conjunction": "and", "children": [
        {"kind": "field", "columnName": "name", "location": "LOCATION_TYPE_EXPERIMENT",
         "type": "COLUMN_TYPE_TEXT", "operator": "=", "value": "multi"}]}}  # fmt: skip
    r = await master.client.post(
        "/api/v1/runs", headers=master.user, json={"projectId": 1, "filter": json.dumps(flt)}
    )
    assert r.status_code == 200, r.text
    assert sorted(x["id"] for x in r.json()["runs"]) == sorted(runs)
    assert r.json()["pagination"]["total"] == 2
    for bad in ({"filter": "{"}, {"sort": "id=sideways"}, {"limit": -1}, {"projectId": "x"}):
        r = await master.client.post("/api/v1/runs", headers=master.user, json=bad)
        assert r.status_code == 400, (bad, r.text)
    assert (await master.client.post("/api/v1/runs", json={})).status_code == 401


async def _act(master: Master, verb: str, body: dict, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """POST /api/v1/runs/VERB as the real clients do: a 503 (SQLite busy while the master's
    own loops write, Retry-After) is sent again."""
    for _ in range(50):
        r = await master.client.post(
            f"/api/v1/runs/{verb}", headers=headers or master.user, json=body
        )
        if r.status_code != 503:
            return r
        await asyncio.sleep(0.1)
    raise AssertionError("still 503 after 50 tries")


async def test_bulk_run_actions(master: Master) -> None:
    single, (run,) = await _experiment(master, "single")
    _, runs = await _experiment(master, "multi", trials=2)
    r = await _act(master, "pause", {"runIds": [run, runs[0], 987654]}, master.user)
    assert r.status_code == 200, r.text
    results = {x["id"]: x["error"] for x in r.json()["results"]}
    assert results[run] == ""
    assert "multi-trial" in results[runs[0]] and "not found" in results[987654]
    exp = (await master.client.get(f"/api/v1/experiments/{single}", headers=master.user)).json()
    assert exp["experiment"]["state"] == "STATE_PAUSED"
    r = await _act(master, "resume", {"runIds": [run]}, master.user)
    assert r.json()["results"] == [{"error": "", "id": run}]
    # kill acts on the run itself, multi-trial or not
    r = await _act(master, "kill", {"runIds": [runs[1]]}, master.user)
    assert r.json()["results"] == [{"error": "", "id": runs[1]}]
    # another user's runs are refused per run
    r = await _act(master, "kill", {"runIds": [run]}, master.admin)
    assert r.json()["results"][0]["error"] == ""  # the admin may
    body = {"runIds": [runs[0]], "sourceProjectId": 1, "destinationProjectId": 1,
            "skipMultitrial": True}  # fmt: skip
    r = await _act(master, "move", body)
    assert r.json()["results"] == [{"error": "", "id": runs[0]}]
    r = await _act(
        master, "move", {"runIds": [run], "sourceProjectId": 1, "destinationProjectId": 987654}
    )
    assert r.status_code == 404
    for body in ({}, {"runIds": ["x"]}, {"runIds": [2**40]}):
        r = await _act(master, "kill", body)
        assert r.status_code == 400, (body, r.text)


async def test_delete_runs(master: Master) -> None:
    """A single-trial experiment's run deletes the experiment once it has ended; a live one and
    a multi-trial experiment's run are refused per run."""
    single, (run,) = await _experiment(master, "single")
    _, runs = await _experiment(master, "multi", trials=2)
    r = await _act(master, "delete", {"runIds": [run]})
    assert "only ended experiments" in r.json()["results"][0]["error"], r.text
    await _act(master, "kill", {"runIds": [run]})
    for _ in range(100):
        exp = await master.client.get(f"/api/v1/experiments/{single}", headers=master.user)
        if exp.json()["experiment"]["state"] == "STATE_CANCELED":
            break
        await asyncio.sleep(0.1)
    r = await _act(master, "delete", {"runIds": [run, runs[0]]})
    results = {x["id"]: x["error"] for x in r.json()["results"]}
    assert results[run] == "" and "multi-trial" in results[runs[0]]
    r = await master.client.get(f"/api/v1/experiments/{single}", headers=master.user)
    assert r.status_code == 404
