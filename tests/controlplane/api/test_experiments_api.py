"""Experiments through the API: bad configs and contexts, templates, restarts, DB blips."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from controlplane.app import create_app
from controlplane.domain import context_archive
from tests.conftest import PG_DSN, Master, make_settings

CONFIG = "name: e\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n"


def entry(path: str, content: bytes = b"x", type_: int = 48, mode: int = 0o100644) -> dict:
    return {
        "path": path,
        "type": type_,
        "content": base64.b64encode(content).decode(),
        "mtime": "1700000000",
        "mode": mode,
        "uid": 0,
        "gid": 0,
    }


async def create(master: Master, **body: object):
    return await master.client.post(
        "/api/v1/experiments", json={"config": CONFIG, **body}, headers=master.user
    )


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        ([entry("../escape.py")], "escape"),
        ([entry("/etc/passwd")], "absolute"),
        ([entry("link", type_=50)], "link"),
        ([entry("dev", type_=51)], "device"),
        ([entry("a.py"), entry("./a.py")], "duplicate"),
        ([{"path": "x.py", "type": 48, "content": "!!notbase64", "mtime": "1"}], "base64"),
    ],
)
async def test_malicious_contexts_are_refused(master: Master, files: list, needle: str) -> None:
    r = await create(master, modelDefinition=files)
    assert r.status_code == 400, r.text
    assert needle in r.json()["message"].lower()
    listed = await master.client.get("/api/v1/experiments", headers=master.user)
    assert listed.json()["pagination"]["total"] == 0  # nothing half-created


async def test_oversized_context_is_refused(
    master: Master, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(context_archive, "MAX_CONTEXT_BYTES", 1000)
    r = await create(master, modelDefinition=[entry("big.bin", b"0" * 2000)])
    assert r.status_code == 400 and "size" in r.json()["message"].lower()


async def test_context_round_trips(master: Master) -> None:
    r = await create(master, modelDefinition=[entry("sub", b"", 53, 0o40755), entry("sub/t.py")])
    exp_id = r.json()["experiment"]["id"]
    r = await master.client.get(f"/api/v1/experiments/{exp_id}/model_def", headers=master.user)
    tgz = base64.b64decode(r.json()["b64Tgz"])
    assert len(tgz) > 0


@pytest.mark.parametrize(
    ("config", "needles"),
    [
        ("name: e\nsearcher: [1\n", ["line 3", "flow sequence"]),
        (CONFIG + "max_restarts: many\n", ["max_restarts", "line 6"]),
        (CONFIG + "resources:\n  slots: two\n", ["resources.slots", "line 7"]),
        (CONFIG + "resources:\n  priority: 100\n", ["resources.priority", "line 7"]),
        ("name: e\nentrypoint: x\nsearcher: {name: custom, metric: m}\n", ["removed"]),
        ("name: e\nsearcher: {name: single, metric: m}\n", ["entrypoint"]),
        ("- just\n- a list\n", ["mapping"]),
    ],
)
async def test_bad_configs_name_key_and_line(
    master: Master, config: str, needles: list[str]
) -> None:
    r = await master.client.post(
        "/api/v1/experiments", json={"config": config}, headers=master.user
    )
    assert r.status_code == 400, r.text
    for needle in needles:
        assert needle in r.json()["message"], r.json()["message"]


async def test_lenient_configs_as_determined(master: Master) -> None:
    """A template holding resources.slots is used; a nameless config is named by the master."""
    r = await master.client.post(
        "/api/v1/templates/with-slots",
        json={"config": {"resources": {"slots": 1, "max_slots": 4}}},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    nameless = CONFIG.replace("name: e\n", "")
    r = await master.client.post(
        "/api/v1/experiments",
        json={"config": nameless, "template": "with-slots"},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]
    assert re.fullmatch(r"Experiment \([a-z]+-[a-z]+-[a-z]+\)", exp["name"]), exp["name"]
    assert exp["config"]["name"] == exp["name"]
    assert exp["config"]["resources"]["max_slots"] == 4  # the template applied
    assert exp["config"]["resources"]["slots_per_trial"] == 1


async def test_validate_only_creates_nothing(master: Master) -> None:
    r = await create(master, validateOnly=True)
    assert r.status_code == 200 and r.json()["experiment"] is None
    assert r.json()["config"]["max_restarts"] == 5
    listed = await master.client.get("/api/v1/experiments", headers=master.user)
    assert listed.json()["pagination"]["total"] == 0


async def test_unknown_template_and_project(master: Master) -> None:
    r = await create(master, template="nope")
    assert r.status_code == 404 and "template" in r.json()["message"]
    r = await create(master, projectId=999)
    assert r.status_code == 404 and "project" in r.json()["message"]


async def test_paused_experiment_states(master: Master) -> None:
    exp = (await create(master, activate=False)).json()["experiment"]
    assert exp["state"] == "STATE_PAUSED"
    c, h, i = master.client, master.user, exp["id"]
    assert (await c.post(f"/api/v1/experiments/{i}/archive", headers=h)).status_code == 409
    assert (await c.post(f"/api/v1/experiments/{i}/activate", headers=h)).status_code == 200
    assert (await c.post(f"/api/v1/experiments/{i}/cancel", headers=h)).status_code == 200
    assert (await c.post(f"/api/v1/experiments/{i}/kill", headers=h)).status_code == 200  # no-op
    assert (await c.post(f"/api/v1/experiments/{i}/pause", headers=h)).status_code == 409
    assert (await c.post(f"/api/v1/experiments/{i}/archive", headers=h)).status_code == 200
    r = await c.get("/api/v1/experiments", params={"archived": "false"}, headers=h)
    assert r.json()["pagination"]["total"] == 0
    trials = (await c.get(f"/api/v1/experiments/{i}/trials", headers=h)).json()["trials"]
    assert [t["state"] for t in trials] == ["STATE_CANCELED"]


async def test_list_filters_and_pagination(master: Master) -> None:
    for n in range(5):
        r = await master.client.post(
            "/api/v1/experiments",
            json={"config": CONFIG.replace("name: e", f"name: exp-{n}\nlabels: [l{n % 2}]")},
            headers=master.admin if n % 2 else master.user,
        )
        assert r.status_code == 200, r.text
    c, h = master.client, master.user
    page = (await c.get("/api/v1/experiments", params={"limit": 2, "offset": 2}, headers=h)).json()
    assert [e["name"] for e in page["experiments"]] == ["exp-2", "exp-3"]
    assert page["pagination"] | {} == page["pagination"] and page["pagination"]["endIndex"] == 4
    mine = (await c.get("/api/v1/experiments", params={"users": "determined"}, headers=h)).json()
    assert [e["name"] for e in mine["experiments"]] == ["exp-0", "exp-2", "exp-4"]
    labelled = (await c.get("/api/v1/experiments", params={"labels": "l1"}, headers=h)).json()
    assert [e["name"] for e in labelled["experiments"]] == ["exp-1", "exp-3"]
    desc = (
        await c.get("/api/v1/experiments", params={"orderBy": "ORDER_BY_DESC"}, headers=h)
    ).json()
    assert desc["experiments"][0]["name"] == "exp-4"
    ids = (
        await c.get("/api/v1/experiments", params={"experimentIdFilter.gt": 3}, headers=h)
    ).json()
    assert [e["id"] for e in ids["experiments"]] == [4, 5]


async def test_data_survives_a_master_restart(db_url: str, tmp_path: Path) -> None:
    settings = make_settings(db_url, tmp_path)
    async with AsyncTestClient(app=create_app(settings, announce=lambda _: None)) as c:
        m = Master(client=c, admin={}, user={})
        m.user = await m.login("determined")
        assert (await create(m)).status_code == 200
    async with AsyncTestClient(app=create_app(settings, announce=lambda _: None)) as c:
        m = Master(client=c, admin={}, user={})
        m.user = await m.login("determined")
        listed = (await c.get("/api/v1/experiments", headers=m.user)).json()
        assert listed["pagination"]["total"] == 1 and listed["experiments"][0]["numTrials"] == 1


@pytest.mark.postgres
async def test_postgres_connection_blip_loses_nothing(master: Master, db_url: str) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("only PostgreSQL connections can be cut from outside")
    assert (await create(master)).status_code == 200
    dbname = db_url.rsplit("/", 1)[1]
    admin = await asyncpg.connect(PG_DSN)
    try:
        killed = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1",
            dbname,
        )
    finally:
        await admin.close()
    assert killed >= 1
    # the pool notices the dead connections and reconnects; nothing is lost
    assert (await create(master)).status_code == 200
    listed = await master.client.get("/api/v1/experiments", headers=master.user)
    assert listed.json()["pagination"]["total"] == 2


CLUSTER_STORAGE = {"type": "s3", "bucket": "cluster", "prefix": "p", "save_trial_best": 3}


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        pytest.param(
            "{save_experiment_best: 2, save_trial_latest: 4}",
            {**CLUSTER_STORAGE, "save_experiment_best": 2, "save_trial_latest": 4},
            id="gc-keys-only",
        ),
        pytest.param(
            "{prefix: mine}",
            {
                **CLUSTER_STORAGE,
                "prefix": "mine",
                "save_experiment_best": 0,
                "save_trial_latest": 1,
            },
            id="partial-without-type",
        ),
        pytest.param(
            "{type: shared_fs, host_path: /ckpt}",
            {
                "type": "shared_fs",
                "host_path": "/ckpt",
                "propagation": "rprivate",
                "save_experiment_best": 0,
                "save_trial_best": 3,
                "save_trial_latest": 1,
            },
            id="other-type-replaces",
        ),
    ],
)
async def test_partial_checkpoint_storage_merges_over_the_clusters(
    db_url: str, tmp_path: Path, block: str, expected: dict
) -> None:
    settings = make_settings(db_url, tmp_path, checkpoint_storage=CLUSTER_STORAGE)
    async with AsyncTestClient(app=create_app(settings, announce=lambda _: None)) as c:
        m = Master(client=c, admin={}, user={})
        m.user = await m.login("determined")
        r = await c.post(
            "/api/v1/experiments",
            json={"config": CONFIG + f"checkpoint_storage: {block}\n"},
            headers=m.user,
        )
        assert r.status_code == 200, r.text
        storage = r.json()["config"]["checkpoint_storage"]
        assert {k: v for k, v in storage.items() if v is not None} == expected
