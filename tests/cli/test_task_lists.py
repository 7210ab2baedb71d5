"""`det cmd|notebook|tensorboard list` (--workspace-name, --sort-by, --order-by, --quiet, --csv)
and `kill --force` (cli/task_lists.py), against the in-memory fake master."""

from __future__ import annotations

import csv
import io

import httpx
import pytest

from cli.task_lists import sorted_tasks
from tests.cli.fake_master import FakeMaster, error_body, logged_in, paged, run_det

ITEMS = [
    {"id": "b", "username": "admin", "description": "two", "state": "STATE_RUNNING",
     "resourcePool": "p", "startTime": "2026-01-02T00:00:00Z", "workspaceId": 1},
    {"id": "a", "username": "admin", "description": "one", "state": "STATE_QUEUED",
     "resourcePool": "p", "startTime": "2026-01-03T00:00:00Z", "workspaceId": 2},
    {"id": "c", "username": "admin", "description": "three", "state": "STATE_RUNNING",
     "resourcePool": "p", "startTime": "2026-01-01T00:00:00Z", "workspaceId": 9},
]  # fmt: skip
WORKSPACES = [{"id": 1, "name": "Uncategorized"}, {"id": 2, "name": "team"}]


@pytest.mark.parametrize(
    ("sort_by", "order_by", "ids"),
    [
        ("startTime", "asc", ["c", "b", "a"]),
        ("startTime", "desc", ["a", "b", "c"]),
        ("id", "asc", ["a", "b", "c"]),
        ("description", "asc", ["a", "c", "b"]),
        ("exitStatus", "asc", ["b", "a", "c"]),  # all missing: the order they came in
        ("workspaceName", "asc", ["c", "b", "a"]),
    ],
)
def test_sorted_tasks(sort_by: str, order_by: str, ids: list[str]) -> None:
    items = [dict(i) for i in ITEMS]
    names = {1: "Uncategorized", 2: "team"}
    for item in items:
        if item["workspaceId"] in names:
            item["workspaceName"] = names[item["workspaceId"]]
    assert [t["id"] for t in sorted_tasks(items, sort_by, order_by)] == ids


def _master(plural: str) -> FakeMaster:
    master = FakeMaster({"admin": "secret"})
    logged_in(master)
    master.add("GET", f"/api/v1/{plural}", paged(plural, ITEMS))
    master.add("GET", "/api/v1/workspaces", paged("workspaces", WORKSPACES))
    return master


@pytest.mark.parametrize(
    ("kind", "plural"),
    [("cmd", "commands"), ("notebook", "notebooks"), ("tensorboard", "tensorboards")],
)
def test_list_options(kind: str, plural: str) -> None:
    master = _master(plural)
    result = run_det(master, kind, "list", "-q")
    assert result.exit_code == 0, result.output
    assert result.stdout == "b\na\nc\n"  # as the master sent them
    result = run_det(master, kind, "list", "--csv", "--sort-by", "id", "--order-by", "desc")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0][0] == "ID" and [r[0] for r in rows[1:]] == ["c", "b", "a"]
    assert "RUNNING" in rows[1]
    master.add("GET", "/api/v1/workspaces", {"workspaces": [WORKSPACES[1]], "pagination": {}})
    master.add("GET", "/api/v1/workspaces/2", {"workspace": WORKSPACES[1]})
    result = run_det(master, kind, "list", "-w", "team", "-q")
    assert result.exit_code == 0, result.output
    listed = master.calls("GET", f"/api/v1/{plural}")[-1]
    assert listed.url.params.get("workspaceId") == "2"
    result = run_det(master, kind, "list", "--sort-by", "colour")
    assert result.exit_code == 2


def test_an_unknown_workspace_is_an_error() -> None:
    master = _master("notebooks")
    master.add("GET", "/api/v1/workspaces", {"workspaces": [], "pagination": {}})
    result = run_det(master, "notebook", "list", "--workspace-name", "nope")
    assert result.exit_code == 1 and "nope" in result.stderr


def _kill_master(plural: str) -> FakeMaster:
    master = FakeMaster({"admin": "secret"})
    logged_in(master)
    master.add("POST", f"/api/v1/{plural}/x/kill", {})
    master.add(
        "POST",
        f"/api/v1/{plural}/bad/kill",
        httpx.Response(404, json=error_body(5, "not found: bad")),
    )
    master.add("POST", f"/api/v1/{plural}/z/kill", {})
    return master


@pytest.mark.parametrize(
    ("kind", "plural", "singular"),
    [("cmd", "commands", "command"), ("notebook", "notebooks", "notebook"),
     ("tensorboard", "tensorboards", "tensorboard")],
)  # fmt: skip
def test_kill_stops_at_a_failure_unless_forced(kind: str, plural: str, singular: str) -> None:
    master = _kill_master(plural)
    result = run_det(master, kind, "kill", "x", "bad", "z")
    assert result.exit_code == 1
    assert result.stdout == f"Killed {singular} x\nCowardly not killing z\n"
    assert not master.calls("POST", f"/api/v1/{plural}/z/kill")
    master = _kill_master(plural)
    result = run_det(master, kind, "kill", "--force", "x", "bad", "z")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"Killed {singular} x\nKilled {singular} z\n"
    assert "Skipping" in result.stderr and "bad" in result.stderr


def test_launches_in_a_workspace_with_volumes() -> None:
    master = FakeMaster({"admin": "secret"})
    logged_in(master)
    master.add("GET", "/api/v1/workspaces", {"workspaces": [WORKSPACES[1]], "pagination": {}})
    master.add("GET", "/api/v1/workspaces/2", {"workspace": WORKSPACES[1]})
    master.add("POST", "/api/v1/commands", {"command": {"id": "c-1"}})
    master.add("POST", "/api/v1/notebooks", {"notebook": {"id": "n-1"}})
    master.add("POST", "/api/v1/tensorboards", {"tensorboard": {"id": "t-1"}})
    result = run_det(master, "cmd", "run", "-d", "-w", "team", "-v", "/data:/mnt/data", "ls")
    assert result.exit_code == 0, result.output
    (body,) = master.json_bodies("POST", "/api/v1/commands")
    assert body["workspaceId"] == 2
    assert body["config"]["bind_mounts"] == [{"host_path": "/data", "container_path": "/mnt/data"}]
    result = run_det(master, "notebook", "start", "-d", "--workspace-name", "team")
    assert result.exit_code == 0 and result.stdout == "n-1\n", result.output
    assert master.json_bodies("POST", "/api/v1/notebooks")[0]["workspaceId"] == 2
    result = run_det(master, "tensorboard", "start", "3", "-d", "-w", "team")
    assert result.exit_code == 0, result.output
    assert master.json_bodies("POST", "/api/v1/tensorboards")[0]["workspaceId"] == 2
    result = run_det(master, "cmd", "run", "-d", "-v", "nocolon", "ls")
    assert result.exit_code == 1 and "HOST_PATH:CONTAINER_PATH" in result.stderr
