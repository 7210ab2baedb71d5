"""Lists under RBAC show only the workspaces where the caller holds their view permission.

Generated from the policy table (api/route_permissions.py): every GET route that needs its
permission "anywhere" is a list, and so are the experiment search and the job queue; a test
fails when one has no case here. The world is two workspaces, A and B, each holding one of
everything a list shows (a running experiment and its trial, a command, a notebook, a
TensorBoard, a shell, a model with a label, a template), made by the admin. A Viewer of A
lists each route and sees all of A's objects and none of B's, with pagination totals that
count only what it sees; the job queue keeps B's jobs in their places, limited to what
Determined shows of them (no name, owner or entity). With RBAC off the same user, holding no
role, sees both workspaces, as before. A live master with a fake agent (so that trials,
commands and notebooks get allocations), on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.route_permissions import ANYWHERE, NEEDS
from controlplane.config import MasterSettings
from tests.api.test_rbac_routes import assign, make_user
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import add_agent, experiment_yaml
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually, live_master

VIEWER = 4
NSC = ("commands", "notebooks", "tensorboards", "shells")


def list_routes() -> set[tuple[str, str]]:
    """The lists and searches of the app, from the policy table."""
    found = {
        key
        for key, need in NEEDS.items()
        if need is not None and key[0] == "GET" and need.scope == ANYWHERE
    }
    return found | {
        ("POST", "/api/v1/experiments-search"),
        ("POST", "/api/v1/runs"),
        ("GET", "/api/v1/job-queues-v2"),
    }


@dataclass
class Place:
    """The objects of one workspace, by the names lists show them with."""

    ws: int
    experiments: set[int] = field(default_factory=set)
    trials: set[int] = field(default_factory=set)
    jobs: set[str] = field(default_factory=set)
    tasks: set[str] = field(default_factory=set)  # trials' and commands' task ids
    nsc: dict[str, set[str]] = field(default_factory=dict)
    models: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)
    exp_labels: set[str] = field(default_factory=set)
    templates: set[str] = field(default_factory=set)
    # Detached runs' trials, made by the case that reads them (api/unmanaged.py).
    detached: set[int] = field(default_factory=set)


async def _ok(m: LiveMaster, method: str, path: str, body: Any = None) -> Any:
    r = await m.http.request(method, path, json=body, headers=m.admin)
    assert r.status_code == 200, (path, r.text)
    return r.json()


async def make_place(m: LiveMaster, tag: str) -> Place:
    ws = (await _ok(m, "POST", "/api/v1/workspaces", {"name": f"ws-{tag}"}))["workspace"]["id"]
    p = Place(ws)
    project = await _ok(m, "POST", f"/api/v1/workspaces/{ws}/projects", {"name": f"p-{tag}"})
    body = {"config": experiment_yaml(f"exp-{tag}"), "projectId": project["project"]["id"]}
    exp = (await _ok(m, "POST", "/api/v1/experiments", {**body, "activate": True}))["experiment"]
    p.experiments.add(exp["id"])
    p.jobs.add(exp["jobId"])
    trial = (await _ok(m, "GET", f"/api/v1/experiments/{exp['id']}/trials"))["trials"][0]
    p.trials.add(trial["id"])
    p.tasks.add(trial["taskId"])
    for plural in NSC:
        made: dict[str, Any] = {"config": {"resources": {"slots": 0}}, "workspaceId": ws}
        if plural == "commands":
            made["config"]["entrypoint"] = ["sleep", "100"]
        if plural == "tensorboards":
            made["experimentIds"] = [exp["id"]]
        out = await _ok(m, "POST", f"/api/v1/{plural}", made)
        item = out[plural.removesuffix("s")]
        p.nsc[plural] = {item["id"]}
        p.tasks.add(item["id"])
        p.jobs.add(item["jobId"])
    model = f"model-{tag}"
    await _ok(m, "POST", "/api/v1/models", {"name": model, "workspaceId": ws,
                                            "labels": [f"label-{tag}"]})  # fmt: skip
    p.models.add(model)
    p.labels.add(f"label-{tag}")
    await _ok(m, "POST", f"/api/v1/templates/tpl-{tag}", {"config": {"a": 1}, "workspaceId": ws})
    p.templates.add(f"tpl-{tag}")
    await _ok(m, "PUT", f"/api/v1/experiments/{exp['id']}/labels/exp-label-{tag}")
    p.exp_labels.add(f"exp-label-{tag}")
    return p


async def _all_placed(m: LiveMaster, places: list[Place]) -> None:
    """Waits until every trial and command of both places has a live allocation."""

    async def placed() -> bool:
        live = (await _ok(m, "GET", "/api/v1/tasks"))["allocationIdToSummary"].values()
        return {s["taskId"] for s in live} >= set().union(*(p.tasks for p in places))

    await eventually(placed, timeout=20)


Seen = tuple[set[Any], int | None]  # what a list shows, and its pagination total
Lister = Callable[[LiveMaster, dict[str, str], Place, Place], Awaitable[Seen]]


async def _get(m: LiveMaster, headers: dict[str, str], path: str, **params: Any) -> Any:
    r = await m.http.get(path, headers=headers, params=params)
    assert r.status_code == 200, (path, r.text)
    return r.json()


def _listing(path: str, key: str, field: str = "id") -> Lister:
    async def lister(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
        body = await _get(m, h, path)
        return {x[field] for x in body[key]}, body.get("pagination", {}).get("total")

    return lister


async def _search(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
    r = await m.http.post("/api/v1/experiments-search", json={"limit": 100}, headers=h)
    assert r.status_code == 200, r.text
    body = r.json()
    return {x["experiment"]["id"] for x in body["experiments"]}, body["pagination"]["total"]


async def _runs(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
    r = await m.http.post("/api/v1/runs", json={"limit": 1000}, headers=h)
    assert r.status_code == 200, r.text
    body = r.json()
    return {x["id"] for x in body["runs"]}, body["pagination"]["total"]


async def _tasks(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
    body = await _get(m, h, "/api/v1/tasks")
    return {s["taskId"] for s in body["allocationIdToSummary"].values()}, None


async def _labels(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
    return set((await _get(m, h, "/api/v1/model/labels"))["labels"]), None


async def _exp_labels(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
    return set((await _get(m, h, "/api/v1/experiment/labels"))["labels"]), None


async def _metric_names(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
    """A stream naming experiments: each it may view answers 200 (its first message is read,
    the stream left open by design while the experiment runs), each other is refused."""
    seen = set()
    for exp in a.experiments | b.experiments:
        path = "/api/v1/experiments/metrics-stream/metric-names"
        async with m.http.stream("GET", path, params={"ids": exp}, headers=h) as r:
            assert r.status_code in (200, 403, 404), r.status_code
            if r.status_code == 200:
                async for line in r.aiter_lines():
                    if line.strip():
                        seen.add(exp)
                        break
    return seen, None


async def _queue(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
    """Full entries are what it sees; the others keep their places, limited."""
    body = await _get(m, h, "/api/v1/job-queues-v2")
    full = {j["full"]["jobId"] for j in body["jobs"] if "full" in j}
    for j in body["jobs"]:
        if "limited" in j:
            assert not {"name", "username", "userId", "entityId"} & set(j["limited"]), j
    assert body["pagination"]["total"] == len(body["jobs"])
    return full, None


def _trial_reads(path: str, **params: Any) -> Lister:
    """A read naming trials: each trial it may view answers 200, each other 403."""

    async def lister(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
        seen = set()
        for trial in a.trials | b.trials:
            r = await m.http.get(path, headers=h, params={"trialIds": trial, **params})
            assert r.status_code in (200, 403), r.text
            if r.status_code == 200:
                seen.add(trial)
        return seen, None

    return lister


async def _detached(m: LiveMaster, h: dict[str, str], a: Place, b: Place) -> Seen:
    """GetTrialByExternalID: a detached trial of each place, read by its external ids; one it
    may not view is a 404."""
    seen = set()
    for tag, place in (("a", a), ("b", b)):
        config = f"name: run-{tag}\nworkspace: ws-{tag}\nproject: p-{tag}\n"
        config += "searcher: {name: single, metric: x, max_length: 1}\n"
        body = {"config": config, "unmanaged": True}
        exp = await _ok(m, "PUT", f"/api/v1/experiments/by-external-id/run-{tag}", body)
        create = {"experimentId": exp["experiment"]["id"], "unmanaged": True}
        trial = await _ok(
            m, "PUT", "/api/v1/trials", {"createTrialRequest": create, "externalTrialId": "t"}
        )
        place.detached.add(trial["trial"]["id"])
        r = await m.http.get(f"/api/v1/trials/by-external-id/run-{tag}/t", headers=h)
        assert r.status_code in (200, 404), r.text
        if r.status_code == 200:
            seen.add(r.json()["trial"]["id"])
    return seen, None


# route -> (how to list it, which of a place's objects it shows)
CASES: dict[tuple[str, str], tuple[Lister, Callable[[Place], set[Any]]]] = {
    ("GET", "/api/v1/experiments"): (
        _listing("/api/v1/experiments", "experiments"), lambda p: p.experiments),
    ("POST", "/api/v1/experiments-search"): (_search, lambda p: p.experiments),
    ("POST", "/api/v1/runs"): (_runs, lambda p: p.trials),
    ("GET", "/api/v1/tasks"): (_tasks, lambda p: p.tasks),
    **{
        ("GET", f"/api/v1/{plural}"): (
            _listing(f"/api/v1/{plural}", plural), lambda p, k=plural: p.nsc[k])
        for plural in NSC
    },
    ("GET", "/api/v1/templates"): (
        _listing("/api/v1/templates", "templates", "name"), lambda p: p.templates),
    ("GET", "/api/v1/workspaces"): (_listing("/api/v1/workspaces", "workspaces"), lambda p: {p.ws}),
    ("GET", "/api/v1/models"): (_listing("/api/v1/models", "models", "name"), lambda p: p.models),
    ("GET", "/api/v1/model/labels"): (_labels, lambda p: p.labels),
    ("GET", "/api/v1/experiment/labels"): (_exp_labels, lambda p: p.exp_labels),
    ("GET", "/api/v1/experiments/metrics-stream/metric-names"): (
        _metric_names, lambda p: p.experiments),
    ("GET", "/api/v1/job-queues-v2"): (_queue, lambda p: p.jobs),
    ("GET", "/api/v1/trials/metrics/trial_metrics"): (
        _trial_reads("/api/v1/trials/metrics/trial_metrics", group="training"),
        lambda p: p.trials),
    ("GET", "/api/v1/trials/metrics/training_metrics"): (
        _trial_reads("/api/v1/trials/metrics/training_metrics"), lambda p: p.trials),
    ("GET", "/api/v1/trials/metrics/validation_metrics"): (
        _trial_reads("/api/v1/trials/metrics/validation_metrics"), lambda p: p.trials),
    ("GET", "/api/v1/trials/time-series"): (
        _trial_reads("/api/v1/trials/time-series"), lambda p: p.trials),
    ("GET", "/api/v1/trials/by-external-id/{external_experiment_id:str}/{external_trial_id:str}"): (
        _detached, lambda p: p.detached),
}  # fmt: skip


def test_every_list_of_the_policy_table_has_a_case() -> None:
    assert set(CASES) == list_routes()


@pytest.fixture(params=["rbac", "basic"])
async def world(
    request: pytest.FixtureRequest, db_url: str, tmp_path: Path, agents: list[FakeAgent]
) -> AsyncIterator[tuple[LiveMaster, dict[str, str], Place, Place, bool]]:
    rbac = request.param == "rbac"
    settings = MasterSettings(
        data_dir=tmp_path / "data",
        db={"url": db_url},
        security={"initial_user_password": PASSWORD, "authz": {"type": request.param}},
    )
    async with live_master(settings, PASSWORD) as m:
        await add_agent(m, agents, "a1", 64)
        a, b = await make_place(m, "a"), await make_place(m, "b")
        uid, viewer = await make_user(m, "viewer")
        if rbac:
            await assign(m, uid, VIEWER, a.ws)
        await _all_placed(m, [a, b])
        yield m, viewer, a, b, rbac


@pytest.mark.timeout(180)
async def test_a_viewer_of_one_workspace_lists_its_objects_and_none_of_another(
    world: tuple[LiveMaster, dict[str, str], Place, Place, bool],
) -> None:
    m, viewer, a, b, rbac = world
    wrong: list[str] = []
    for (method, route), (lister, of) in CASES.items():
        seen, total = await lister(m, viewer, a, b)
        want = of(a) if rbac else of(a) | of(b)
        if not want <= seen:
            wrong.append(f"{method} {route}: misses {sorted(want - seen)}")
        if rbac and seen & of(b):
            wrong.append(f"{method} {route}: shows B's {sorted(seen & of(b))}")
        if not rbac and not of(b) <= seen:
            wrong.append(f"{method} {route} with RBAC off: misses B's {sorted(of(b) - seen)}")
        if total is not None and total != len(seen):
            wrong.append(f"{method} {route}: total {total} for {len(seen)} shown")
    assert not wrong, "\n".join(wrong)


@pytest.mark.timeout(180)
async def test_pages_count_only_what_the_viewer_may_see(
    world: tuple[LiveMaster, dict[str, str], Place, Place, bool],
) -> None:
    m, viewer, a, b, rbac = world
    page = await _get(m, viewer, "/api/v1/experiments", limit=1, offset=0)
    assert page["pagination"]["total"] == (1 if rbac else 2)
    # The admin, as RBAC's ClusterAdmin, still sees everything.
    everything = await _get(m, m.admin, "/api/v1/experiments")
    assert {e["id"] for e in everything["experiments"]} >= a.experiments | b.experiments
