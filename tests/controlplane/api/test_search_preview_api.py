"""POST /api/v1/preview-hp-search on SQLite and PostgreSQL: any logged-in user may preview a
search (it reads nothing stored); a config is checked as creating it would be."""

from __future__ import annotations

from typing import Any

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_experiment_files_api import other_user

PATH = "/api/v1/preview-hp-search"
RANDOM = {"searcher": {"name": "random", "metric": "loss", "max_trials": 3},
          "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1}}}  # fmt: skip


async def test_every_user_may_preview(master: Master) -> None:
    alice = await other_user(master)
    for who in (master.user, alice, master.admin):
        r = await master.client.post(PATH, json={"config": RANDOM, "seed": 3}, headers=who)
        assert r.status_code == 200, r.text
        summary = r.json()["summary"]
        assert summary["trials"] == [{"count": 3, "unit": {"maxLength": True}}]
        assert summary["config"]["name"] == "random" and summary["config"]["max_trials"] == 3
    assert (await master.client.post(PATH, json={"config": RANDOM})).status_code == 401


async def test_bad_input(master: Master) -> None:
    cases: list[tuple[Any, str]] = [
        ({"config": {"name": "x"}}, "missing searcher"),
        ({"config": {"searcher": {"name": "nope", "metric": "x"}}}, "searcher"),
        ({"config": {"searcher": {"name": "adaptive_asha", "metric": "x", "max_trials": 2}}},
         "time_metric"),
        ({"config": {"searcher": {"name": "random", "metric": "x", "max_trials": "many"}}}, ""),
        ({"config": "searcher: {name: single}"}, "object"),
        ({}, "object"),
        ({"config": RANDOM, "seed": -1}, ""),
        ({"config": RANDOM, "seed": "x"}, ""),
        ({"config": {**RANDOM, "description": "x" * (2 << 20)}}, ""),
    ]  # fmt: skip
    for body, needle in cases:
        r = await master.client.post(PATH, json=body, headers=master.user)
        assert r.status_code in (400, 413), (body, r.text)
        if r.status_code == 400:
            assert_error(r, 400, needle)


async def test_nul_bytes_are_only_echoed(master: Master) -> None:
    # Nothing is stored, so a NUL in a name is no harm here: it comes back as it went in.
    body = {"config": {"searcher": {"name": "single", "metric": "a\x00b"}}}
    r = await master.client.post(PATH, json=body, headers=master.user)
    assert r.status_code == 200, r.text
    assert r.json()["summary"]["config"]["metric"] == "a\x00b"
