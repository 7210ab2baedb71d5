"""Determined 0.38.1's list options in ours (cli/pages.py and the list commands): `--limit`,
`--offset`, `--pages 1|all`, `--csv`, `--yaml`, `--show_project`, against the fake master."""

from __future__ import annotations

import csv
import io
import json

import httpx
import pytest
import yaml

from cli.pages import Pages, fetch_pages
from tests.cli.fake_master import FakeMaster, logged_in, paged, run_det

EXPERIMENTS = [
    {"id": i, "username": "admin", "name": f"e{i}", "state": "STATE_COMPLETED",
     "workspaceName": "Uncategorized", "projectName": "Uncategorized", "resourcePool": "default"}
    for i in range(1, 8)
]  # fmt: skip


def _master() -> FakeMaster:
    master = FakeMaster({"admin": "secret"})
    logged_in(master)
    master.add("GET", "/api/v1/experiments", paged("experiments", EXPERIMENTS))
    trials = [{"id": 10 + i, "state": "STATE_COMPLETED"} for i in range(5)]
    master.add("GET", "/api/v1/experiments/1/trials", paged("trials", trials))
    ckpt = {"uuid": "u-1", "state": "STATE_COMPLETED", "training": {"trialId": 10}}
    master.add("GET", "/api/v1/experiments/1/checkpoints", paged("checkpoints", [ckpt]))
    master.add("GET", "/api/v1/resource-pools", paged("resourcePools", []))
    jobs = [{"full": {"jobId": f"j{i}", "type": "TYPE_COMMAND", "name": f"c{i}"}} for i in range(3)]
    master.add("GET", "/api/v1/job-queues-v2", paged("jobs", jobs))
    return master


def _pages_read(master: FakeMaster, path: str) -> list[tuple[str | None, str | None]]:
    return [
        (r.url.params.get("offset"), r.url.params.get("limit")) for r in master.calls("GET", path)
    ]


@pytest.mark.parametrize(
    ("flags", "ids", "reads"),
    [
        ([], list(range(1, 8)), [("0", "200")]),
        (["--limit", "3"], [1, 2, 3], [("0", "3")]),  # --limit alone: one page (ours, as before)
        (["--limit", "3", "--pages", "all"], list(range(1, 8)), [("0", "3"), ("3", "3"),
                                                                ("6", "3")]),
        (["--limit", "3", "--offset", "2", "--pages", "1"], [3, 4, 5], [("2", "3")]),
        (["--offset", "5"], [6, 7], [("5", "200")]),
    ],
)  # fmt: skip
def test_experiment_list_pages(
    flags: list[str], ids: list[int], reads: list[tuple[str, str]]
) -> None:
    master = _master()
    result = run_det(master, "experiment", "list", "--all", "--csv", *flags)
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0][:3] == ["ID", "Owner", "Name"]
    assert [int(r[0]) for r in rows[1:]] == ids
    assert _pages_read(master, "/api/v1/experiments") == reads


def test_experiment_list_show_project() -> None:
    master = _master()
    result = run_det(master, "e", "list", "--all", "--show_project", "--csv", "--limit", "1")
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0][:3] == ["Workspace", "Project", "ID"]
    assert rows[1][:3] == ["Uncategorized", "Uncategorized", "1"]


def test_list_trials_and_checkpoints_csv_and_pages() -> None:
    master = _master()
    result = run_det(master, "e", "list-trials", "1", "--csv", "--limit", "2", "--offset", "1")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0][0] == "Trial ID" and [r[0] for r in rows[1:]] == ["11", "12"]
    result = run_det(master, "e", "list-checkpoints", "1", "--csv")
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0][0] == "Trial ID" and rows[1][0] == "10" and "u-1" in rows[1]


def test_job_list_csv_yaml_table_pages() -> None:
    master = _master()
    result = run_det(master, "job", "list", "--csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0][:2] == ["#", "ID"] and [r[1] for r in rows[1:]] == ["j0", "j1", "j2"]
    result = run_det(master, "job", "list", "--yaml")
    assert [j["jobId"] for j in yaml.safe_load(result.stdout)["jobs"]] == ["j0", "j1", "j2"]
    assert "j1" in run_det(master, "job", "list", "--table").stdout
    before = len(master.calls("GET", "/api/v1/job-queues-v2"))
    result = run_det(master, "job", "list", "--pages", "1", "--limit", "2", "--json")
    assert result.exit_code == 0, result.output
    assert _pages_read(master, "/api/v1/job-queues-v2")[before:] == [("0", "2")]


class _Client:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def get(self, path: str, params: dict) -> dict:
        self.calls.append(("get", dict(params)))
        return {"items": [params["offset"]]}

    def paginate(self, path: str, key: str, params: dict, *, page_size: int) -> list:
        self.calls.append(("all", {**params, "page_size": page_size}))
        return []


@pytest.mark.parametrize(
    ("limit", "offset", "pages", "call"),
    [
        (None, 0, None, ("all", {"offset": 0, "page_size": 200})),
        (5, 0, None, ("get", {"offset": 0, "limit": 5})),
        (5, 3, Pages.all, ("all", {"offset": 3, "page_size": 5})),
        (None, 3, Pages.one, ("get", {"offset": 3, "limit": 200})),
        (None, 0, "all", ("all", {"offset": 0, "page_size": 200})),
    ],
)
def test_fetch_pages(limit: int | None, offset: int, pages: Pages | None, call: tuple) -> None:
    client = _Client()
    fetch_pages(client, "/x", "items", limit=limit, offset=offset, pages=pages)  # type: ignore[arg-type]
    assert client.calls == [call]


def _project_master() -> FakeMaster:
    master = _master()
    master.add("GET", "/api/v1/workspaces", {"workspaces": [{"id": 1, "name": "w"}]})
    master.add("GET", "/api/v1/workspaces/1", {"workspace": {"id": 1, "name": "w"}})
    master.add("GET", "/api/v1/workspaces/1/projects", {"projects": [{"id": 5, "name": "p"}]})
    return master


def test_project_list_experiments_sort_order_and_pages() -> None:
    master = _project_master()
    args = ["project", "list-experiments", "w", "p", "--all", "--json"]
    result = run_det(master, *args, "--sort-by", "name", "--order-by", "desc", "--limit", "3")
    assert result.exit_code == 0, result.output
    calls = master.calls("GET", "/api/v1/experiments")
    assert [(c.url.params["offset"], c.url.params["limit"]) for c in calls] == [
        ("0", "3"), ("3", "3"), ("6", "3"),
    ]  # fmt: skip
    assert calls[0].url.params["sortBy"] == "SORT_BY_NAME"
    assert calls[0].url.params["orderBy"] == "ORDER_BY_DESC"
    before = len(calls)
    result = run_det(master, *args, "--offset", "2", "--limit", "2")
    assert result.exit_code == 0, result.output
    calls = master.calls("GET", "/api/v1/experiments")[before:]
    assert [(c.url.params["offset"], c.url.params["limit"]) for c in calls] == [("2", "2")]
    assert run_det(master, *args, "--sort-by", "colour").exit_code == 2


def _search(key: str, items: list[dict]) -> object:
    def reply(request: httpx.Request) -> dict:
        body = json.loads(request.content)
        offset, limit = body.get("offset", 0), body.get("limit", 0) or len(items)
        page = items[offset : offset + limit]
        end = offset + len(page)
        return {key: page, "pagination": {"offset": offset, "endIndex": end, "total": len(items)}}

    return reply


def test_rbac_list_roles_and_user_group_list_pages() -> None:
    master = _master()
    roles = [{"name": f"r{i}", "roleId": i, "permissions": []} for i in range(5)]
    master.add("POST", "/api/v1/roles/search/by-assignability", _search("roles", roles))
    result = run_det(master, "rbac", "list-roles", "--limit", "2", "--json")
    assert result.exit_code == 0, result.output
    assert [r["roleId"] for r in json.loads(result.stdout)["roles"]] == [0, 1, 2, 3, 4]
    bodies = master.json_bodies("POST", "/api/v1/roles/search/by-assignability")
    assert [(b["offset"], b["limit"]) for b in bodies] == [(0, 2), (2, 2), (4, 2)]
    result = run_det(master, "rbac", "list-roles", "--limit", "2", "--offset", "1", "--pages", "1",
                     "--json")  # fmt: skip
    assert [r["roleId"] for r in json.loads(result.stdout)["roles"]] == [1, 2]
    groups = [{"group": {"groupId": i, "name": f"g{i}"}, "numMembers": 0} for i in range(3)]
    master.add("POST", "/api/v1/groups/search", _search("groups", groups))
    result = run_det(master, "user-group", "list", "--limit", "1", "--json")
    assert [g["group"]["groupId"] for g in json.loads(result.stdout)["groups"]] == [0]
    result = run_det(master, "user-group", "list", "--limit", "1", "--pages", "all", "--json")
    assert [g["group"]["groupId"] for g in json.loads(result.stdout)["groups"]] == [0, 1, 2]


def test_trial_describe_csv_and_pages() -> None:
    master = _master()
    master.add("GET", "/api/v1/trials/7", {"trial": {"id": 7, "state": "STATE_COMPLETED"}})
    master.add("GET", "/api/v1/trials/7/cost", httpx.Response(404, json={"message": "no"}))
    workloads = [
        {"training": {"totalBatches": 10 * (i + 1), "state": "STATE_COMPLETED",
                      "metrics": {"avgMetrics": {"loss": 1.0 / (i + 1)}}}}
        for i in range(4)
    ]  # fmt: skip
    master.add("GET", "/api/v1/trials/7/workloads", paged("workloads", workloads))
    result = run_det(master, "trial", "describe", "7", "--csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["Batches", "Type", "State", "End Time", "Checkpoint", "Metrics"]
    assert [r[0] for r in rows[1:]] == ["10", "20", "30", "40"]
    result = run_det(master, "t", "describe", "7", "--csv", "--limit", "2", "--offset", "1")
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert [r[0] for r in rows[1:]] == ["20", "30"]
