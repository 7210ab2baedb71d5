"""`POST /api/v1/experiments/continue` (Determined's ContinueExperiment) and forks
(`POST /api/v1/experiments` with parentId), through the API on both databases."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conftest import Master

SINGLE = "name: e\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n"
SEARCH = (
    "name: s\nentrypoint: python3 train.py\n"
    "searcher: {name: random, metric: loss, max_trials: 3, max_concurrent_trials: 3}\n"
    "hyperparameters: {x: {type: double, minval: 0, maxval: 1}}\n"
)
FILE = {"path": "train.py", "type": 48, "content": base64.b64encode(b"print(1)").decode()}


async def ended(master: Master, config: str) -> dict[str, Any]:
    r = await master.client.post(
        "/api/v1/experiments",
        json={"config": config, "activate": False, "modelDefinition": [FILE]},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]
    r = await master.client.post(f"/api/v1/experiments/{exp['id']}/kill", headers=master.user)
    assert r.status_code == 200, r.text
    return exp


async def get(master: Master, path: str) -> Any:
    r = await master.client.get(path, headers=master.user)
    assert r.status_code == 200, r.text
    return r.json()


async def cont(master: Master, body: dict[str, Any], headers: dict[str, str] | None = None):
    return await master.client.post(
        "/api/v1/experiments/continue", json=body, headers=headers or master.user
    )


async def test_a_single_trial_experiment_continues_with_overrides(master: Master) -> None:
    exp = await ended(master, SINGLE)
    (trial,) = (await get(master, f"/api/v1/experiments/{exp['id']}/trials"))["trials"]
    assert trial["state"] == "STATE_CANCELED"
    r = await cont(master, {"id": exp["id"], "overrideConfig": "max_restarts: 2\n"})
    assert r.status_code == 200, r.text
    # The real client reads the continued experiment from the answer (a KeyError without it).
    answer = r.json()
    assert answer["experiment"]["id"] == exp["id"] and answer["warnings"] == []
    assert answer["experiment"]["state"] == "STATE_QUEUED"  # ACTIVE, nothing placed yet
    body = await get(master, f"/api/v1/experiments/{exp['id']}")
    assert body["experiment"]["state"] == "STATE_QUEUED"
    assert body["config"]["max_restarts"] == 2
    (again,) = (await get(master, f"/api/v1/experiments/{exp['id']}/trials"))["trials"]
    assert again["id"] == trial["id"] and again["state"] == "STATE_ACTIVE"
    assert again["endTime"] is None


async def test_a_search_continues_its_unfinished_trials_and_keeps_its_space(
    master: Master,
) -> None:
    exp = await ended(master, SEARCH)
    changed = "hyperparameters: {x: {type: double, minval: 0, maxval: 2}}\n"
    r = await cont(master, {"id": exp["id"], "overrideConfig": changed})
    assert r.status_code == 400 and "hyperparameters cannot change" in r.json()["message"]
    r = await cont(master, {"id": exp["id"]})
    assert r.status_code == 200, r.text
    trials = (await get(master, f"/api/v1/experiments/{exp['id']}/trials"))["trials"]
    assert [t["state"] for t in trials] == ["STATE_ACTIVE"] * 3


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"id": 999999}, 404, "not found"),
        ({"id": "one"}, 400, ""),
        ({"id": 2**40}, 400, ""),
        ({}, 400, ""),
        ({"id": 1, "overrideConfig": "max_restarts: [\n"}, 400, ""),
        ({"id": 1, "overrideConfig": "searcher: {name: nope}\n"}, 400, "searcher"),
    ],
)
async def test_bad_continue_requests_are_refused_and_change_nothing(
    master: Master, body: dict[str, Any], status: int, needle: str
) -> None:
    exp = await ended(master, SINGLE)
    assert exp["id"] == 1
    r = await cont(master, body)
    assert r.status_code == status, r.text
    assert needle in r.json()["message"]
    assert (await get(master, "/api/v1/experiments/1"))["experiment"]["state"] == "STATE_CANCELED"


async def test_only_an_ended_experiment_continues(master: Master) -> None:
    """(Who may continue one: tests/api/test_ownership.py.)"""
    exp = await ended(master, SINGLE)
    r = await cont(master, {"id": exp["id"]}, headers=master.admin)
    assert r.status_code == 200, r.text
    r = await cont(master, {"id": exp["id"]})
    assert r.status_code == 409 and "only an ended experiment" in r.json()["message"]


async def test_a_fork_without_files_runs_its_parents_code(master: Master) -> None:
    parent = await ended(master, SINGLE)
    r = await master.client.post(
        "/api/v1/experiments",
        json={"config": SINGLE.replace("name: e", "name: child"), "parentId": parent["id"]},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    child = r.json()["experiment"]
    mine = await get(master, f"/api/v1/experiments/{child['id']}/model_def")
    theirs = await get(master, f"/api/v1/experiments/{parent['id']}/model_def")
    assert mine["b64Tgz"] == theirs["b64Tgz"] != ""
    r = await master.client.post(
        "/api/v1/experiments", json={"config": SINGLE, "parentId": 424242}, headers=master.user
    )
    assert r.status_code == 404, r.text
