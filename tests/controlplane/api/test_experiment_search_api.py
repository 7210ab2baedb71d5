"""The experiment list's API: search with a filter tree and sort, the project's columns, bulk
actions with per-experiment results, and the reduced metric series; on both databases."""

from __future__ import annotations

import json
from typing import Any

from controlplane.domain.series_reduction import reduce_series
from tests.conftest import Master
from tests.support import webui_seed

SEARCH = "/api/v1/experiments-search"


def _filter(*conds: tuple[str, str, Any], conjunction: str = "and", archived: bool = False) -> str:
    children = [
        {"kind": "field", "columnName": c, "operator": op, "value": v} for c, op, v in conds
    ]
    group = {"kind": "group", "conjunction": conjunction, "children": children}
    return json.dumps({"filterGroup": group, "showArchived": archived})


async def _uid(master: Master, headers: dict[str, str]) -> int:
    return (await master.client.get("/api/v1/me", headers=headers)).json()["user"]["id"]


async def _search(master: Master, **body: Any) -> dict[str, Any]:
    r = await master.client.post(SEARCH, json={"projectId": 1, **body}, headers=master.user)
    assert r.status_code == 200, r.text
    return r.json()


async def test_filter_and_or_sort_by_validation_metric(master: Master, db_url: str) -> None:
    owner = await _uid(master, master.user)
    seeded = await webui_seed.seed(db_url, owner_id=owner, experiments=120, trials_per=3)
    flt = _filter(("hp.layers", "=", 3), ("state", "=", "STATE_COMPLETED"))
    body = await _search(master, filter=flt, sort="validation.validation_loss=asc", limit=1000)
    want = [
        i
        for i in range(120)
        if webui_seed.layers_of(i) == 3 and webui_seed.state_of(i) == "COMPLETED"
    ]
    assert body["pagination"]["total"] == len(want)
    best = [min(webui_seed.metric_of(i, j) for j in range(3)) for i in want]
    got = [e["bestTrial"]["searcherMetricValue"] for e in body["experiments"]]
    assert got == sorted(best)
    assert {e["experiment"]["id"] for e in body["experiments"]} == {
        seeded.experiment_ids[i] for i in want
    }
    either = _filter(("hp.layers", "=", 3), ("state", "=", "PAUSED"), conjunction="or")
    body = await _search(master, filter=either, limit=0)
    want_or = [
        i for i in range(120) if webui_seed.layers_of(i) == 3 or webui_seed.state_of(i) == "PAUSED"
    ]
    assert body["pagination"]["total"] == len(want_or)
    page = await _search(master, sort="id=asc", offset=10, limit=5)
    assert [e["experiment"]["id"] for e in page["experiments"]] == seeded.experiment_ids[10:15]


async def test_hparam_filter_matches_the_values_trials_sampled(master: Master, db_url: str) -> None:
    """`dropout` is a range in the config: the filter reads what each trial drew from it."""
    owner = await _uid(master, master.user)
    seeded = await webui_seed.seed(db_url, owner_id=owner, experiments=40, trials_per=3)
    body = await _search(master, filter=_filter(("hp.dropout", ">", 0.4)), limit=1000)
    want = {
        seeded.experiment_ids[i]
        for i in range(40)
        if any(webui_seed.dropout_of(i, j) > 0.4 for j in range(3))
    }
    assert 0 < len(want) < 40
    assert body["pagination"]["total"] == len(want)
    assert {e["experiment"]["id"] for e in body["experiments"]} == want
    # A constant still matches on the config, also before any trial exists.
    bare = await master.client.post(
        "/api/v1/experiments",
        json={
            "config": (
                "name: bare\nentrypoint: python3 train.py\n"
                "hyperparameters: {dropout: {type: const, val: 0.45}}\n"
                "searcher: {name: single, metric: x, max_length: 10}\n"
            ),
            "activate": False,
        },
        headers=master.user,
    )
    assert bare.status_code in (200, 201), bare.text
    bare_id = bare.json()["experiment"]["id"]
    body = await _search(master, filter=_filter(("hp.dropout", ">", 0.4)), limit=1000)
    assert {e["experiment"]["id"] for e in body["experiments"]} == want | {bare_id}
    empty = await _search(master, filter=_filter(("hp.dropout", "is empty", None)), limit=0)
    assert empty["pagination"]["total"] == 0
    # The searcher's trials are searchable as it creates them.
    search = await master.client.post(
        "/api/v1/experiments",
        json={
            "config": (
                "name: drawn\nentrypoint: python3 train.py\n"
                "hyperparameters: {dropout: {type: double, minval: 0.46, maxval: 0.5}}\n"
                "searcher: {name: random, metric: x, max_trials: 2, max_length: 10}\n"
            ),
            "activate": True,
        },
        headers=master.user,
    )
    assert search.status_code in (200, 201), search.text
    drawn = search.json()["experiment"]["id"]
    trials = await master.client.get(f"/api/v1/experiments/{drawn}/trials", headers=master.user)
    assert len(trials.json()["trials"]) == 2
    body = await _search(master, filter=_filter(("hp.dropout", ">", 0.45)), limit=1000)
    assert drawn in {e["experiment"]["id"] for e in body["experiments"]}
    body = await _search(master, filter=_filter(("hp.dropout", "<", 0.45)), limit=1000)
    assert drawn not in {e["experiment"]["id"] for e in body["experiments"]}


async def test_bad_filters_are_refused_with_a_reason(master: Master) -> None:
    for flt, words in (
        ("{not json", "not JSON"),
        ("[]", "JSON object"),
        (_filter(("nosuchcolumn", "=", 1)), "unknown column"),
        (_filter(("state", "=", "STATE_BOGUS")), "unknown state"),
        (_filter(("id", "~", 1)), "unknown operator"),
        (_filter(("na\x00me", "=", "x")), "column name"),
    ):
        r = await master.client.post(SEARCH, json={"filter": flt}, headers=master.user)
        assert r.status_code == 400, (flt, r.text)
        assert words in r.json()["message"], r.text
    r = await master.client.post(SEARCH, json={"sort": "id=sideways"}, headers=master.user)
    assert r.status_code == 400
    r = await master.client.post(SEARCH, json={"limit": 10**6}, headers=master.user)
    assert r.status_code == 400
    r = await master.client.post(SEARCH, json={"limit": 1})
    assert r.status_code == 401


async def test_bulk_archive_of_all_matching_and_refusals_for_non_owners(
    master: Master, db_url: str
) -> None:
    owner = await _uid(master, master.user)
    seeded = await webui_seed.seed(db_url, owner_id=owner, experiments=60, trials_per=1, marked=7)
    marked = _filter(("tags", "contains", "marked"))
    assert (await _search(master, filter=marked, limit=0))["pagination"]["total"] == 7
    other = await master.login("admin")  # an admin may; a second plain user may not
    await master.client.post(
        "/api/v1/users",
        json={"user": {"username": "bob"}, "password": "Test-Passw0rd!"},
        headers=other,
    )
    bob = await master.login("bob")
    r = await master.client.post(
        "/api/v1/experiments/archive", json={"projectId": 1, "searchFilter": marked}, headers=bob
    )
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == 7
    assert all("only the owner" in x["error"] for x in results)
    r = await master.client.post(
        "/api/v1/experiments/archive",
        json={"projectId": 1, "searchFilter": marked},
        headers=master.user,
    )
    results = r.json()["results"]
    assert sorted(x["id"] for x in results) == seeded.experiment_ids[:7]
    # PAUSED experiments (index 4 of every 5) cannot be archived: their refusal says why.
    refused = {x["id"] for x in results if x["error"]}
    assert refused == {
        seeded.experiment_ids[i] for i in range(7) if webui_seed.state_of(i) == "PAUSED"
    }
    archived = await _search(master, filter=_filter(("tags", "contains", "marked"), archived=True))
    flags = {e["experiment"]["id"]: e["experiment"]["archived"] for e in archived["experiments"]}
    assert {i for i, a in flags.items() if a} == set(seeded.experiment_ids[:7]) - refused
    assert (await _search(master, limit=0))["pagination"]["total"] == 60 - 7 + len(refused)
    r = await master.client.post(
        "/api/v1/experiments/pause", json={"experimentIds": [999999]}, headers=master.user
    )
    assert r.json()["results"] == [{"error": "experiment 999999 not found", "id": 999999}]
    r = await master.client.post("/api/v1/experiments/pause", json={}, headers=master.user)
    assert r.status_code == 400
    r = await master.client.post(
        "/api/v1/experiments/move",
        json={"experimentIds": [seeded.experiment_ids[0]], "destinationProjectId": 4242},
        headers=master.user,
    )
    assert r.status_code == 404


async def test_project_columns_list_hparams_and_validation_metrics(
    master: Master, db_url: str
) -> None:
    owner = await _uid(master, master.user)
    await webui_seed.seed(db_url, owner_id=owner, experiments=3, trials_per=1)
    r = await master.client.get("/api/v1/projects/1/columns", headers=master.user)
    names = {c["column"]: c["location"] for c in r.json()["columns"]}
    assert names["hp.layers"] == "LOCATION_TYPE_HYPERPARAMETERS"
    assert names["validation.validation_loss"] == "LOCATION_TYPE_VALIDATIONS"
    assert names["state"] == "LOCATION_TYPE_EXPERIMENT"
    r = await master.client.get("/api/v1/projects/999/columns", headers=master.user)
    assert r.status_code == 404


async def test_time_series_keeps_the_spike_and_is_exact_zoomed_in(
    master: Master, db_url: str
) -> None:
    owner = await _uid(master, master.user)
    seeded = await webui_seed.seed(db_url, owner_id=owner, experiments=1, trials_per=1)
    trial = seeded.trial_ids[0]
    await webui_seed.seed_series(
        db_url, trial, steps=5000, names=("loss", "acc"), spike_at=3333, spike=50.0
    )
    url = "/api/v1/trials/time-series"
    r = await master.client.get(
        url,
        params={"trialIds": trial, "group": "training", "maxDatapoints": 300},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    data = r.json()["trials"][0]["metrics"][0]["data"]
    assert len(data) <= 100 * 3 * 2
    spike = [p for p in data if p["batches"] == 3333]
    assert spike and spike[0]["values"]["loss"] == 50.0
    assert data[-1]["batches"] == 5000
    # Both databases keep exactly the pure reduction's points, metric by metric.
    steps = list(range(1, 5001))
    for k, name in enumerate(("loss", "acc")):
        values = [1.0 / (1 + s * (k + 1) / 1000) for s in steps]
        if name == "loss":
            values[3332] = 50.0
        kept = reduce_series(steps, values, buckets=100)
        drawn = {p["batches"]: p["values"][name] for p in data if name in p["values"]}
        assert drawn == {steps[i]: values[i] for i in kept}
    r = await master.client.get(
        url,
        params={
            "trialIds": trial,
            "group": "training",
            "maxDatapoints": 3000,
            "startBatches": 3000,
            "endBatches": 3999,
        },
        headers=master.user,
    )
    data = r.json()["trials"][0]["metrics"][0]["data"]
    assert [p["batches"] for p in data] == list(range(3000, 4000))
    for bad in ({"trialIds": 999999}, {}, {"trialIds": trial, "group": "a.b"}):
        r = await master.client.get(url, params=bad, headers=master.user)
        assert r.status_code in (400, 404), (bad, r.text)


async def test_time_series_with_long_and_quoted_metric_names(master: Master, db_url: str) -> None:
    """A name PostgreSQL cannot take as a column (over 63 bytes) and one with a quote reduce to
    the same points as the pure reduction."""
    owner = await _uid(master, master.user)
    trial = (await webui_seed.seed(db_url, owner_id=owner, experiments=1, trials_per=1)).trial_ids[
        0
    ]
    names = ("m" * 70, 'we"ird name')
    await webui_seed.seed_series(db_url, trial, steps=1000, names=names, spike_at=10, spike=-5.0)
    r = await master.client.get(
        "/api/v1/trials/time-series",
        params={"trialIds": trial, "group": "training", "maxDatapoints": 30},
        headers=master.user,
    )
    data = r.json()["trials"][0]["metrics"][0]["data"]
    steps = list(range(1, 1001))
    for k, name in enumerate(names):
        values = [1.0 / (1 + s * (k + 1) / 1000) for s in steps]
        if k == 0:
            values[9] = -5.0
        kept = reduce_series(steps, values, buckets=10)
        drawn = {p["batches"]: p["values"][name] for p in data if name in p["values"]}
        assert drawn == {steps[i]: values[i] for i in kept}


async def test_numbers_compared_with_text_hyperparameters_do_not_fail(
    master: Master, db_url: str
) -> None:
    owner = await _uid(master, master.user)
    await webui_seed.seed(db_url, owner_id=owner, experiments=5, trials_per=1)
    config = (
        "name: texty\nentrypoint: python3 train.py\n"
        "searcher: {name: single, metric: validation_loss, max_length: 10}\n"
        "hyperparameters: {layers: deep, lr: 0.5}\nresources: {slots_per_trial: 1}\n"
    )
    r = await master.client.post(
        "/api/v1/experiments", json={"config": config, "activate": False}, headers=master.user
    )
    assert r.status_code == 200, r.text
    body = await _search(
        master, filter=_filter(("hp.layers", ">", 2)), sort="hp.layers=desc", limit=100
    )
    want = sum(1 for i in range(5) if webui_seed.layers_of(i) > 2)
    assert body["pagination"]["total"] == want
    body = await _search(master, filter=_filter(("hp.layers", "=", "deep")), limit=100)
    assert [e["experiment"]["name"] for e in body["experiments"]] == ["texty"]
    body = await _search(master, sort="validation.validation_loss=asc,hp.layers=asc", limit=100)
    assert body["pagination"]["total"] == 6


async def test_time_series_metric_ids_and_time_series_filter(master: Master, db_url: str) -> None:
    owner = await _uid(master, master.user)
    seeded = await webui_seed.seed(db_url, owner_id=owner, experiments=1, trials_per=1)
    trial = seeded.trial_ids[0]
    await webui_seed.seed_series(
        db_url, trial, steps=200, names=("loss", "acc"), spike_at=150, spike=9.0
    )
    url = "/api/v1/trials/time-series"
    r = await master.client.get(
        url,
        params={
            "trialIds": trial,
            "metricIds": ["training.loss", "validation.validation_loss"],
            "maxDatapoints": 3000,
            "timeSeriesFilter.name": "batches",
            "timeSeriesFilter.integerRange.gt": "140",
            "timeSeriesFilter.integerRange.lte": "160",
            "timeSeriesFilter.integerRange.notIn": ["145", "146"],
        },
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    training, validation = r.json()["trials"][0]["metrics"]
    assert training["group"] == "training" and training["type"] == "METRIC_TYPE_TRAINING"
    want = [s for s in range(141, 161) if s not in (145, 146)]
    assert [p["batches"] for p in training["data"]] == want
    assert all(set(p["values"]) == {"loss"} for p in training["data"])
    assert training["data"][want.index(150)]["values"]["loss"] == 9.0
    # The one validation report is at batch 100, outside the filter.
    assert validation["group"] == "validation" and validation["data"] == []
    r = await master.client.get(
        url, params={"trialIds": trial, "metricIds": "validation.validation_loss"},
        headers=master.user,
    )  # fmt: skip
    (only,) = r.json()["trials"][0]["metrics"]
    assert [p["batches"] for p in only["data"]] == [100]
    for params, message in [
        ({"metricIds": "loss"}, "group.metric_name"),
        ({"metricIds": "bad\x01group.loss"}, "invalid metric group"),
        ({"timeSeriesFilter.name": "steps"}, "must be one of"),
        ({"timeSeriesFilter.integerRange.gt": "1"}, "name is required"),
        ({"timeSeriesFilter.name": "batches", "timeSeriesFilter.integerRange.gt": "x"}, "number"),
        ({"metricIds": [f"training.m{i}" for i in range(51)]}, "at most 50"),
    ]:
        r = await master.client.get(url, params={"trialIds": trial, **params}, headers=master.user)
        assert r.status_code == 400 and message in r.json()["message"], (params, r.text)


async def test_hparam_filter_names_nested_and_categorical_values(
    master: Master, db_url: str
) -> None:
    owner = await _uid(master, master.user)
    seeded = await webui_seed.seed(
        db_url,
        owner_id=owner,
        experiments=3,
        trials_per=2,
        hparams_of=lambda i, j: {"opt": {"lr": 0.1 * (i + 1), "name": ["sgd", "adam"][j]}},
    )
    ids = seeded.experiment_ids
    body = await _search(master, filter=_filter(("hp.opt.lr", ">", 0.25)), limit=10)
    assert [e["experiment"]["id"] for e in body["experiments"]] == [ids[2]]
    body = await _search(master, filter=_filter(("hp.opt.name", "=", "adam")), limit=10)
    assert body["pagination"]["total"] == 3
    body = await _search(master, filter=_filter(("hp.opt.name", "contains", "gd")), limit=10)
    assert body["pagination"]["total"] == 3
    body = await _search(master, filter=_filter(("hp.opt.name", "=", "rmsprop")), limit=10)
    assert body["pagination"]["total"] == 0
