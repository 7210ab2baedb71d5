"""What work cost and historical usage through the API (api/usage.py), on SQLite and
PostgreSQL: one trial's allocation on a provisioned instance, checked against a hand-computed
table, in Determined's JSON and CSV shapes, plus the callers and bad input."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest

from controlplane.db.models import Allocation, ProvisionerInstance
from controlplane.db.session import make_engine, make_sessionmaker
from tests.conftest import Master

CONFIG = """\
name: costed
entrypoint: python3 train.py
labels: [nightly, gpu]
searcher:
  name: single
  metric: loss
  max_length: 10
hyperparameters:
  lr: 0.1
resources:
  slots_per_trial: 2
"""

DAY = datetime(2026, 12, 1, tzinfo=UTC)
DAILY = "RESOURCE_ALLOCATION_AGGREGATION_PERIOD_DAILY"


def at(hour: int) -> datetime:
    return DAY.replace(hour=hour)


# A 4-slot instance at $4.00/h ($1 per slot-hour) lives 00:00-04:00 on 2026-12-01; the trial
# holds 2 of its slots 01:00-03:00: 4 slot-hours, $4.00. The instance itself: 4 h x $4 = $16.
TRIAL_COST = 4.0
TRIAL_SLOT_SECONDS = 4 * 3600.0
INSTANCE_COST = 16.0


async def _setup(master: Master, db_url: str) -> dict:
    exp = (
        await master.client.post(
            "/api/v1/experiments", json={"config": CONFIG}, headers=master.user
        )
    ).json()["experiment"]
    r = await master.client.get(f"/api/v1/experiments/{exp['id']}/trials", headers=master.user)
    trial = r.json()["trials"][0]
    engine = make_engine(db_url)
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            session.add(
                ProvisionerInstance(
                    pool="default",
                    instance_id="i-0abc",
                    agent_name="i-0abc",
                    offer_key="g5.12xlarge@subnet-a/on-demand",
                    instance_type="g5.12xlarge",
                    spot=False,
                    slots=4,
                    price_per_hour=4.0,
                    launched_at=at(0),
                    ended_at=at(4),
                )
            )
            session.add(
                Allocation(
                    allocation_id=f"{trial['taskId']}.1",
                    task_id=trial["taskId"],
                    state="TERMINATED",
                    token_hash="cost-test-" + trial["taskId"][:40],
                    slots=2,
                    resource_pool="default",
                    placement={"i-0abc": [0, 1]},
                    start_time=at(1),
                    end_time=at(3),
                )
            )
    finally:
        await engine.dispose()
    return {"experiment": exp["id"], "trial": trial["id"]}


async def test_experiment_and_trial_cost(master: Master, db_url: str) -> None:
    ids = await _setup(master, db_url)
    r = await master.client.get(
        f"/api/v1/experiments/{ids['experiment']}/cost", headers=master.user
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["total"] == {
        "cost": TRIAL_COST,
        "slotHours": 4.0,
        "unpricedSlotHours": 0.0,
        "currency": "USD",
    }
    assert body["byTrial"][str(ids["trial"])]["cost"] == TRIAL_COST
    assert body["byResourcePool"]["default"]["cost"] == TRIAL_COST
    r = await master.client.get(f"/api/v1/trials/{ids['trial']}/cost", headers=master.admin)
    assert r.status_code == 200, r.text
    trial = r.json()
    assert trial["experimentId"] == ids["experiment"]
    assert trial["total"]["cost"] == TRIAL_COST
    [alloc] = trial["allocations"]
    assert alloc["slots"] == 2 and alloc["startTime"] == "2026-12-01T01:00:00Z"


async def test_aggregated_in_determined_shape(master: Master, db_url: str) -> None:
    await _setup(master, db_url)
    for params in (
        {"startDate": "2026-11-30", "endDate": "2026-12-02", "period": DAILY},
        {"start_date": "2026-11-30", "end_date": "2026-12-02", "period": DAILY},
    ):
        r = await master.client.get(
            "/api/v1/resources/allocation/aggregated", params=params, headers=master.user
        )
        assert r.status_code == 200, r.text
        entries = r.json()["resourceEntries"]
        assert [e["periodStart"] for e in entries] == ["2026-11-30", "2026-12-01", "2026-12-02"]
        day = entries[1]
        assert day["seconds"] == TRIAL_SLOT_SECONDS
        assert day["byUsername"] == {"determined": TRIAL_SLOT_SECONDS}
        assert day["byExperimentLabel"] == {
            "gpu": TRIAL_SLOT_SECONDS,
            "nightly": TRIAL_SLOT_SECONDS,
        }
        assert day["byResourcePool"] == {"default": TRIAL_SLOT_SECONDS}
        assert day["cost"] == TRIAL_COST and day["costByUsername"] == {"determined": TRIAL_COST}
        assert entries[0]["seconds"] == 0 and entries[0]["byUsername"] == {}
    r = await master.client.get(
        "/api/v1/resources/allocation/aggregated",
        params={
            "startDate": "2026-12",
            "endDate": "2026-12",
            "period": "RESOURCE_ALLOCATION_AGGREGATION_PERIOD_MONTHLY",
        },
        headers=master.user,
    )
    [month] = r.json()["resourceEntries"]
    assert month["periodStart"] == "2026-12" and month["cost"] == TRIAL_COST


async def test_raw_and_the_csv_exports(master: Master, db_url: str) -> None:
    ids = await _setup(master, db_url)
    window = {"timestampAfter": "2026-12-01T00:00:00Z", "timestampBefore": "2026-12-02T00:00:00Z"}
    r = await master.client.get(
        "/api/v1/resources/allocation/raw", params=window, headers=master.user
    )
    assert r.status_code == 200, r.text
    entries = r.json()["resourceEntries"]
    by_kind = {e["kind"]: e for e in entries}
    assert set(by_kind) == {"trial", "instance"}
    trial = by_kind["trial"]
    assert trial["experimentId"] == ids["experiment"] and trial["username"] == "determined"
    me = (await master.client.get("/api/v1/me", headers=master.user)).json()["user"]
    assert trial["userId"] == me["id"] and trial["labels"] == ["nightly", "gpu"]
    assert trial["seconds"] == 7200 and trial["slots"] == 2 and trial["cost"] == TRIAL_COST
    instance = by_kind["instance"]
    assert instance["username"] == "i-0abc" and instance["cost"] == INSTANCE_COST
    snake = {"timestamp_after": "2026-12-01T00:00:00Z", "timestamp_before": "2026-12-02T00:00:00Z"}
    r = await master.client.get(
        "/resources/allocation/allocations-csv", params=snake, headers=master.user
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    [row] = list(csv.DictReader(io.StringIO(r.text)))
    assert int(row["experiment_id"]) == ids["experiment"]
    assert row["task_type"] == "TRIAL" and row["username"] == "determined"
    assert row["workspace_name"] == "Uncategorized" and row["slots"] == "2"
    assert float(row["cost_usd"]) == TRIAL_COST and float(row["slot_hours"]) == 4.0
    r = await master.client.get("/resources/allocation/raw", params=snake, headers=master.user)
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert {row["kind"] for row in rows} == {"trial", "instance"}
    assert next(row for row in rows if row["kind"] == "trial")["labels"] == "nightly,gpu"
    r = await master.client.get(
        "/resources/allocation/aggregated",
        params={
            "start_date": "2026-12-01",
            "end_date": "2026-12-01",
            "period": "RESOURCE_ALLOCATION_AGGREGATION_PERIOD_DAILY",
        },
        headers=master.user,
    )
    rows = list(csv.DictReader(io.StringIO(r.text)))
    total = next(row for row in rows if row["aggregation_type"] == "total")
    assert float(total["seconds"]) == TRIAL_SLOT_SECONDS and float(total["cost_usd"]) == 4.0


@pytest.mark.parametrize(
    ("group", "keys"),
    [
        ("user", ["determined"]),
        ("workspace", ["Uncategorized"]),
        ("pool", ["default"]),
        ("label", ["gpu", "nightly"]),  # an allocation counts under each of its labels
    ],
)
async def test_cost_by_group(master: Master, db_url: str, group: str, keys: list[str]) -> None:
    await _setup(master, db_url)
    r = await master.client.get(
        "/api/v1/resources/cost",
        params={
            "groupBy": group,
            "timestampAfter": "2026-12-01T02:00:00Z",
            "timestampBefore": "2026-12-02T00:00:00Z",
        },
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    # only 02:00-03:00 of the allocation lies in the window: 2 slot-hours, $2
    two = {"cost": 2.0, "slotHours": 2.0, "unpricedSlotHours": 0.0, "currency": "USD"}
    assert r.json()["groups"] == dict.fromkeys(keys, two)
    assert r.json()["total"] == two
    # the instance's own cost in the window, busy or idle: 02:00-04:00, 4 slots, $8
    machines = {"cost": 8.0, "slotHours": 8.0, "unpricedSlotHours": 0.0, "currency": "USD"}
    assert r.json()["instancesByPool"] == {"default": machines}


AGG = "/api/v1/resources/allocation/aggregated"
RAW = "/api/v1/resources/allocation/raw"
DAYS = {"startDate": "2026-12-01", "endDate": "2026-12-02", "period": DAILY}
WINDOW = {"timestampAfter": "2026-12-01T00:00:00Z", "timestampBefore": "2026-12-02T00:00:00Z"}
BAD = [
    ("/api/v1/experiments/999999/cost", {}, 404),
    ("/api/v1/trials/999999/cost", {}, 404),
    ("/api/v1/experiments/0/cost", {}, 400),
    ("/api/v1/trials/99999999999999999999/cost", {}, 400),
    (AGG, {}, 400),
    (AGG, {**DAYS, "period": ""}, 400),
    (AGG, {**DAYS, "endDate": "2026-11-02"}, 400),
    (AGG, {**DAYS, "startDate": "2026-12-01\x00"}, 400),
    (AGG, {**DAYS, "startDate": "9" * 5000}, 400),
    (RAW, {"timestampAfter": "2026-12-01T00:00:00Z"}, 400),
    (RAW, {"timestampAfter": "x", "timestampBefore": "y"}, 400),
    (
        "/resources/allocation/allocations-csv",
        {"timestamp_after": "2026-12-02T00:00:00Z", "timestamp_before": "2026-12-01T00:00:00Z"},
        400,
    ),
    ("/api/v1/resources/cost", {"groupBy": "planet", **WINDOW}, 400),
    ("/api/v1/resources/cost", {"groupBy": "user"}, 400),
]


@pytest.mark.parametrize(("path", "params", "status"), BAD)
async def test_bad_input(master: Master, path: str, params: dict, status: int) -> None:
    r = await master.client.get(path, params=params, headers=master.user)
    assert r.status_code == status, r.text


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/resources/allocation/aggregated",
        "/api/v1/resources/allocation/raw",
        "/resources/allocation/allocations-csv",
        "/api/v1/resources/cost",
        "/api/v1/experiments/1/cost",
    ],
)
async def test_unauthenticated(master: Master, path: str) -> None:
    assert (await master.client.get(path)).status_code == 401
