"""`det resources` (usage exports and cost) and the cost lines of `det experiment describe` and
`det trial describe`, in-process against the fake master."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.cli.fake_master import MASTER, FakeMaster, logged_in, paged, run_det
from tests.cli.test_commands import EXPERIMENT, TRIAL, WORKLOADS

CSV = "allocation_id,task_type,cost_usd\nt.1,TRIAL,4.000000\n"


@pytest.fixture
def master() -> FakeMaster:
    m = FakeMaster(users={"admin": "secret"})
    logged_in(m)
    return m


def summary(cost: float, unpriced: float = 0.0) -> dict:
    return {"cost": cost, "slotHours": 4.0, "unpricedSlotHours": unpriced, "currency": "USD"}


def test_allocations_csv_is_printed_as_the_master_sends_it(master: FakeMaster) -> None:
    master.add("GET", "/resources/allocation/allocations-csv", httpx.Response(200, text=CSV))
    result = run_det(master, "res", "alloc", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z")
    assert result.exit_code == 0, result.output
    assert result.stdout == CSV
    [call] = master.calls("GET", "/resources/allocation/allocations-csv")
    assert call.url.params["timestamp_after"] == "2026-12-01T00:00:00Z"
    assert call.headers["Authorization"].startswith("Bearer ")


def test_aggregated_monthly_json_and_raw(master: FakeMaster) -> None:
    master.add("GET", "/api/v1/resources/allocation/aggregated", {"resourceEntries": []})
    result = run_det(master, "resources", "aggregated", "2026-11", "2026-12", "--monthly", "--json")
    assert json.loads(result.stdout) == {"resourceEntries": []}
    params = master.calls("GET", "/api/v1/resources/allocation/aggregated")[0].url.params
    assert params["period"] == "RESOURCE_ALLOCATION_AGGREGATION_PERIOD_MONTHLY"
    master.add("GET", "/resources/allocation/raw", httpx.Response(200, text="experiment_id\n"))
    result = run_det(master, "res", "raw", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z")
    assert result.stdout == "experiment_id\n"


def test_cost_by_group_table(master: FakeMaster) -> None:
    master.add(
        "GET",
        "/api/v1/resources/cost",
        {"groups": {"alice": summary(4.0), "bob": summary(0.0, 2.5)}, "total": summary(4.0, 2.5)},
    )
    result = run_det(master, "res", "cost", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z")
    assert result.exit_code == 0, result.output
    assert "alice" in result.stdout and "$4.00" in result.stdout
    assert "+2.50 unpriced slot-hours" in result.stdout and "(total)" in result.stdout
    params = master.calls("GET", "/api/v1/resources/cost")[0].url.params
    assert params["groupBy"] == "user"
    master.add(
        "GET",
        "/api/v1/resources/cost",
        {
            "groups": {"gpu": summary(4.0)},
            "total": summary(4.0),
            "instancesByPool": {"gpu": summary(10.0)},
        },
    )
    out = run_det(master, "res", "cost", "a", "b", "-g", "pool").stdout
    assert "Provisioned machines" in out and "$10.00" in out and "$6.00" in out  # idle: 10 - 4
    bad = run_det(master, "res", "cost", "a", "b", "--group-by", "planet")
    assert bad.exit_code == 2 and "--group-by" in bad.output


def test_describe_shows_cost(master: FakeMaster) -> None:
    master.add("GET", "/api/v1/experiments/7", {"experiment": EXPERIMENT})
    master.add("GET", "/api/v1/experiments/7/trials", paged("trials", [TRIAL]))
    master.add("GET", "/api/v1/trials/11/workloads", paged("workloads", WORKLOADS))
    master.add(
        "GET",
        "/api/v1/experiments/7/cost",
        {"total": summary(12.5), "byTrial": {"11": summary(12.5)}, "byResourcePool": {}},
    )
    result = run_det(master, "e", "describe", "7")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("$12.50") == 2  # the experiment's line and the trial's column
    master.add("GET", "/api/v1/trials/11", {"trial": TRIAL})
    master.add("GET", "/api/v1/trials/11/cost", {"total": summary(3.25), "allocations": []})
    out = run_det(master, "t", "describe", "11").stdout
    assert "Cost" in out and "$3.25" in out
    body = json.loads(run_det(master, "t", "describe", "11", "--json").stdout)
    assert body["cost"]["total"]["cost"] == 3.25


def test_describe_against_a_master_without_costs(master: FakeMaster) -> None:
    # Determined's own master has no cost routes (404): describe works and shows none.
    master.add("GET", "/api/v1/trials/11", {"trial": TRIAL})
    master.add("GET", "/api/v1/trials/11/workloads", paged("workloads", WORKLOADS))
    result = run_det(master, "t", "describe", "11")
    assert result.exit_code == 0 and "Cost" not in result.stdout
    assert MASTER.startswith("http://127.0.0.1")
