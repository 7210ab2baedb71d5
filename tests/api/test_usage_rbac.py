"""The cost and usage routes under RBAC answer as the policy table says (api/route_permissions.py),
for every role: an experiment's and a trial's cost where it lives (VIEW_EXPERIMENT_METADATA),
the cluster's usage cluster-wide only (VIEW_CLUSTER_USAGE, as Determined's CanGetUsageDetails)."""

from __future__ import annotations

import pytest

from tests.api.test_rbac_routes import MATRIX, build_world, callers
from tests.api.test_rbac_routes import rbac_master as rbac_master
from tests.support.live_master import LiveMaster

WINDOW = "timestampAfter=2026-12-01T00:00:00Z&timestampBefore=2026-12-02T00:00:00Z"
DAYS = "startDate=2026-12-01&endDate=2026-12-01&period=RESOURCE_ALLOCATION_AGGREGATION_PERIOD_DAILY"
SNAKE = "timestamp_after=2026-12-01T00:00:00Z&timestamp_before=2026-12-02T00:00:00Z"


@pytest.mark.timeout(180)
async def test_cost_and_usage_routes_answer_as_the_table_says(rbac_master: LiveMaster) -> None:
    m = rbac_master
    w = await build_world(m)
    trials = await m.get(f"/api/v1/experiments/{w.experiment}/trials")
    trial = trials["trials"][0]["id"]
    routes = [
        ("/api/v1/experiments/{experiment_id:int}/cost", ""),
        ("/api/v1/trials/{trial_id:int}/cost", ""),
        ("/api/v1/resources/cost", f"groupBy=user&{WINDOW}"),
        ("/api/v1/resources/allocation/aggregated", DAYS),
        ("/api/v1/resources/allocation/raw", WINDOW),
        ("/resources/allocation/allocations-csv", SNAKE),
    ]
    ids = {"{experiment_id:int}": str(w.experiment), "{trial_id:int}": str(trial)}
    calls = {}
    for route, query in routes:
        path = route
        for param, value in ids.items():
            path = path.replace(param, value)
        calls[("GET", route)] = f"{path}?{query}" if query else path
    wrong: list[str] = []
    allowed_somewhere = set()
    for key, path in calls.items():
        for c in callers():
            if c.name not in w.headers:
                continue
            r = await m.http.get(path, headers=w.headers[c.name])
            allowed = MATRIX[(key, c.name)]
            if allowed != (r.status_code == 200):
                wrong.append(f"{c.name} {path}: {r.status_code} {r.text[:160]}")
            if allowed and c.name != "admin":
                allowed_somewhere.add(key)
    assert not wrong, "\n".join(wrong)
    assert allowed_somewhere == set(calls)  # each route is open to some role, not only admins
