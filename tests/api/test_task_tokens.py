"""Task tokens are least privilege (issue 14, finding 1).

A task's token (DET_SESSION_TOKEN, sent as ``Grpc-Metadata-x-allocation-token``) used to carry
every right of the task's owner: with an admin trial's token, ``POST /api/v1/users`` made a new
admin, ``GET /api/v1/master/config`` answered, another user's password was changed. Now every
route of the app is classified (`controlplane.api.access.RULES`; a route without a class fails
here) and the class decides what each kind of task token may do there.

The table over all routes: every route is called with a trial's token and with a command's
token wherever the rules refuse them (the path naming another trial, experiment, allocation or
task where a route names one), and must answer 403. Routes the rules allow are checked by the
named tests below (and the Core API tests under tests/compat and tests/harness), not blindly:
with made-up parameters they would change real objects.
"""

from __future__ import annotations

import inspect
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.handlers import HTTPRouteHandler

from agent.protocol import StartContainer
from controlplane.api.access import RULES, TARGETS, target_of
from controlplane.app import create_app
from controlplane.config import MasterSettings
from controlplane.domain.access import CallerKind, RouteClass, Target, decide
from controlplane.services.principals import Principal
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import add_agent, experiment_yaml
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster, eventually

HEADER = "Grpc-Metadata-x-allocation-token"
NO_PRINCIPAL = {RouteClass.PUBLIC, RouteClass.AGENT}


def app_routes(app: Litestar) -> dict[tuple[str, str], Any]:
    """Every (method, path) the app serves, with its handler; "WS" for websockets. OPTIONS
    (CORS preflight, answered by Litestar itself) carries no token and is left out."""
    out: dict[tuple[str, str], Any] = {}
    for route in app.routes:
        for handler in getattr(route, "route_handlers", None) or [route.route_handler]:
            if not isinstance(handler, HTTPRouteHandler):
                out["WS", route.path] = handler
                continue
            for method in handler.http_methods:
                if method != "OPTIONS":
                    out[method, route.path] = handler
    return out


def test_every_route_is_classified(tmp_path: Path) -> None:
    """A new route fails here until it has a class; a stale rule fails too."""
    routes = app_routes(create_app(MasterSettings(data_dir=tmp_path)))
    missing = sorted(set(routes) - set(RULES))
    assert not missing, f"routes without a class in controlplane.api.access.RULES: {missing}"
    stale = sorted(set(RULES) - set(routes))
    assert not stale, f"rules for routes the app does not serve: {stale}"
    for key, handler in routes.items():
        rule = RULES[key]
        if rule.route not in NO_PRINCIPAL:
            # The rules are applied where the caller is resolved: a route without a caller
            # would be open to everyone.
            assert "principal" in inspect.signature(handler.fn).parameters, key
        if rule.target is not None:
            assert rule.target in TARGETS, key
            assert f"{{{rule.target}:" in key[1], f"{key}: no path parameter {rule.target}"


def test_admin_routes_are_the_ones_a_task_must_never_reach() -> None:
    admin = {key for key, rule in RULES.items() if rule.route is RouteClass.ADMIN}
    assert {
        ("POST", "/api/v1/users"),
        ("GET", "/api/v1/master/config"),
        ("POST", "/api/v1/agents/{agent_id:str}/enable"),
        ("POST", "/api/v1/agents/{agent_id:str}/disable"),
    } <= admin
    account = {key for key, rule in RULES.items() if rule.route is RouteClass.ACCOUNT}
    assert {
        ("PATCH", "/api/v1/users/{user_id:int}"),
        ("POST", "/api/v1/users/{user_id:int}/password"),
        ("POST", "/api/v1/auth/logout"),
    } <= account


# --- a live master with an admin's trial, a second trial and an admin's command -----------------


def headers_of(start: StartContainer) -> dict[str, str]:
    return {HEADER: f"Bearer {start.spec.environment['DET_SESSION_TOKEN']}"}


@dataclass
class World:
    m: LiveMaster
    agent: FakeAgent
    trial: StartContainer  # the admin's trial whose token is used
    other: StartContainer  # another trial of the admin: what "another object" is
    command: StartContainer  # the admin's command whose token is used
    alice: dict[str, str]
    alice_id: int

    def env(self, start: StartContainer, key: str) -> str:
        return start.spec.environment[key]


async def _started(agent: FakeAgent, count: int) -> list[StartContainer]:
    async def found() -> list[StartContainer]:
        starts = list(agent.started.values())
        return starts if len(starts) >= count else []

    return await eventually(found, timeout=20)


async def _world(m: LiveMaster, agents: list[FakeAgent]) -> World:
    agent = await add_agent(m, agents, "a1", 4)
    for name in ("mine", "theirs"):
        body = {"config": experiment_yaml(name), "modelDefinition": [], "activate": True}
        await m.post("/api/v1/experiments", body)
        await _started(agent, 1 if name == "mine" else 2)
    cmd = {"config": {"entrypoint": ["sleep", "100"], "resources": {"slots": 0}}}
    await m.post("/api/v1/commands", cmd)
    starts = await _started(agent, 3)
    trials = [s for s in starts if s.spec.task_type == "TRIAL"]
    (command,) = [s for s in starts if s.spec.task_type == "COMMAND"]
    await m.post("/api/v1/users", {"user": {"username": "alice"}, "password": PASSWORD})
    alice_id = (await m.get("/api/v1/users/alice/by-username"))["user"]["id"]
    return World(
        m=m,
        agent=agent,
        trial=trials[0],
        other=trials[1],
        command=command,
        alice=await m.login("alice", PASSWORD),
        alice_id=alice_id,
    )


async def test_an_admin_trials_token_cannot_act_as_an_admin(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    """The finding as reported: each of these answered 200 with an admin trial's token."""
    m = await start_master()
    w = await _world(m, agents)
    for start in (w.trial, w.command):
        task = headers_of(start)
        made = {"user": {"username": f"evil{start.spec.task_type}", "admin": True}}
        r = await m.http.post("/api/v1/users", json={**made, "password": PASSWORD}, headers=task)
        assert r.status_code == 403, r.text
        r = await m.http.get("/api/v1/master/config", headers=task)
        assert r.status_code == 403, r.text
        r = await m.http.post(f"/api/v1/users/{w.alice_id}/password", json="x", headers=task)
        assert r.status_code == 403, r.text
        r = await m.http.patch(
            f"/api/v1/users/{w.alice_id}", json={"password": "x", "admin": True}, headers=task
        )
        assert r.status_code == 403, r.text
        r = await m.http.post("/api/v1/agents/a1/disable", json={"drain": True}, headers=task)
        assert r.status_code == 403, r.text
    users = (await m.get("/api/v1/users"))["users"]
    assert not [u for u in users if u["username"].startswith("evil")]
    assert await m.login("alice", PASSWORD)  # her password is unchanged
    assert (await m.get("/api/v1/agents/a1"))["agent"]["enabled"]


def _fill(w: World, path: str, target: str | None) -> str:
    """The route's path with every parameter filled; the target names another task's object."""
    other = {
        "trial_id": w.env(w.other, "DET_TRIAL_ID"),
        "run_id": w.env(w.other, "DET_TRIAL_ID"),
        "experiment_id": w.env(w.other, "DET_EXPERIMENT_ID"),
        "allocation_id": w.other.spec.allocation_id,
        "task_id": w.other.spec.task_id,
        "command_id": w.other.spec.task_id,
        "notebook_id": w.other.spec.task_id,
        "tensorboard_id": w.other.spec.task_id,
        "shell_id": w.other.spec.task_id,
    }
    plain = {
        "user_id": str(w.alice_id),
        "username": "alice",
        "agent_id": "a1",
        "pool_name": "default",
        "template_name": "tpl",
        "checkpoint_uuid": str(uuid.uuid4()),
        "workspace_id": "1",
        "project_id": "1",
        "model_name": "some model",
        "version": "1",
        "resources_id": w.other.container.id,
        "group_id": "1",
        "webhook_id": "1",
        "external_experiment_id": "detached-run",
        "external_trial_id": "detached-trial",
        "label": "some label",
        "token_id": "1",
        "workload_type": "EXPERIMENT",
        "slot_id": "0",
        "key": "some-key",
    }

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return other[name] if name == target else plain.get(name) or other[name]

    return re.sub(r"\{(\w+):\w+\}", value, path)


@pytest.mark.timeout(300)
async def test_every_route_refuses_task_tokens_where_the_rules_say_so(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    w = await _world(m, agents)
    callers = {CallerKind.TRIAL: w.trial, CallerKind.TASK: w.command}
    wrong: list[str] = []
    called = 0
    for (method, path), rule in sorted(RULES.items()):
        if method == "WS" or rule.route is RouteClass.PUBLIC:
            continue
        target = Target.NONE if rule.target is None else Target.OTHER
        for kind, start in callers.items():
            if decide(kind, rule.route, target).allowed:
                continue
            url = _fill(w, path, rule.target)
            body = {} if method in ("POST", "PATCH", "PUT") else None
            r = await m.http.request(method, url, json=body, headers=headers_of(start))
            called += 1
            if r.status_code != 403:
                wrong.append(f"{method} {url} with a {kind} token: {r.status_code} {r.text[:200]}")
    assert not wrong, "\n".join(wrong)
    assert called > 20  # the table really ran
    # Nothing of the other trial changed on the way.
    other_trial = await m.get(f"/api/v1/trials/{w.env(w.other, 'DET_TRIAL_ID')}")
    assert other_trial["trial"]["state"] in ("STATE_ACTIVE", "STATE_RUNNING")


async def test_a_trials_token_acts_on_its_own_trial_and_reads_what_its_owner_may(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    w = await _world(m, agents)
    task = headers_of(w.trial)
    trial_id, exp_id = w.env(w.trial, "DET_TRIAL_ID"), w.env(w.trial, "DET_EXPERIMENT_ID")
    other_trial, other_exp = w.env(w.other, "DET_TRIAL_ID"), w.env(w.other, "DET_EXPERIMENT_ID")
    report = {"group": "training", "metrics": {"stepsCompleted": 1, "metrics": {"avgMetrics": {}}}}
    ok = [
        ("POST", f"/api/v1/trials/{trial_id}/metrics", report),
        ("POST", f"/api/v1/runs/{trial_id}/metadata", {"metadata": {"k": 1}}),
        ("GET", f"/api/v1/runs/{trial_id}/metadata", None),
        ("GET", f"/api/v1/allocations/{w.trial.spec.allocation_id}/signals/preemption", None),
        ("PATCH", f"/api/v1/experiments/{exp_id}", {"notes": "from my trial"}),
        # Reads, of its own and of others, as its owner may.
        ("GET", f"/api/v1/experiments/{other_exp}", None),
        ("GET", f"/api/v1/trials/{other_trial}/workloads", None),
        ("GET", "/api/v1/users", None),
        ("GET", "/api/v1/agents", None),
        ("GET", "/api/v1/me", None),
    ]
    for method, url, body in ok:
        r = await m.http.request(method, url, json=body, headers=task)
        assert r.status_code == 200, (method, url, r.text)
    refused = [
        ("POST", f"/api/v1/trials/{other_trial}/metrics", report),
        ("POST", f"/api/v1/experiments/{other_exp}/kill", None),
        ("POST", "/api/v1/experiments", {"config": experiment_yaml("x"), "activate": False}),
        ("POST", "/api/v1/commands", {"config": {"entrypoint": ["true"]}}),
        ("POST", "/api/v1/templates/mine", {"config": {"a": 1}}),
        ("POST", "/api/v1/runs/start", {"runId": int(other_trial)}),
        ("POST", "/api/v1/task/logs", {"logs": [{"taskId": w.other.spec.task_id, "log": "x"}]}),
    ]
    for method, url, body in refused:
        r = await m.http.request(method, url, json=body, headers=task)
        assert r.status_code == 403, (method, url, r.text)
    # still running (shown RUNNING, derived from its allocation, as Determined does)
    state = (await m.get(f"/api/v1/experiments/{other_exp}"))["experiment"]["state"]
    assert state in ("STATE_ACTIVE", "STATE_RUNNING")


async def test_a_commands_token_acts_as_its_owner_without_admin_rights(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    w = await _world(m, agents)
    task = headers_of(w.command)
    body = {"config": experiment_yaml("alices"), "modelDefinition": [], "activate": False}
    r = await m.http.post("/api/v1/experiments", json=body, headers=w.alice)
    alices = r.json()["experiment"]["id"]
    # As its owner (the admin): it creates experiments, changes the admin's own objects ...
    body = {"config": experiment_yaml("from-a-command"), "activate": False}
    r = await m.http.post("/api/v1/experiments", json=body, headers=task)
    assert r.status_code == 200, r.text
    made = r.json()["experiment"]
    assert made["username"] == "admin"
    r = await m.http.post(f"/api/v1/experiments/{made['id']}/kill", headers=task)
    assert r.status_code == 200, r.text
    # ... but an admin's rights over other users' objects stay with the admin's login.
    r = await m.http.post(f"/api/v1/experiments/{alices}/kill", headers=task)
    assert r.status_code == 403, r.text
    r = await m.http.post(f"/api/v1/experiments/{alices}/kill", headers=m.admin)
    assert r.status_code == 200, r.text


async def test_a_token_ends_with_its_allocation(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    w = await _world(m, agents)
    for start in (w.trial, w.command):
        r = await m.http.get("/api/v1/me", headers=headers_of(start))
        assert r.status_code == 200, r.text
        await w.agent.exit(start.container.id, 0)

        async def refused(start: StartContainer = start) -> bool:
            r = await m.http.get("/api/v1/me", headers=headers_of(start))
            return r.status_code == 401

        await eventually(refused, timeout=10)


def test_a_task_principal_names_its_own_objects() -> None:
    """`target_of` compares a path's value with the task's own trial, experiment, allocation and
    task; users have no own objects in this sense."""
    from controlplane.db.models import Allocation, User

    user = User(id=1, username="u", admin=False)
    alloc = Allocation(allocation_id="t.1", task_id="t")
    trial = Principal(
        user=user, token="x", allocation=alloc, task_type="TRIAL", trial_id=7, experiment_id=3
    )
    assert target_of(trial, "trial_id", {"trial_id": 7}) is Target.OWN
    assert target_of(trial, "run_id", {"run_id": 8}) is Target.OTHER
    assert target_of(trial, "experiment_id", {"experiment_id": 3}) is Target.OWN
    assert target_of(trial, "allocation_id", {"allocation_id": "t.1"}) is Target.OWN
    assert target_of(trial, "task_id", {"task_id": "u"}) is Target.OTHER
    assert target_of(trial, None, {}) is Target.NONE
    command = Principal(user=user, token="x", allocation=alloc, task_type="COMMAND")
    assert target_of(command, "trial_id", {"trial_id": 7}) is Target.OTHER
    assert target_of(command, "command_id", {"command_id": "t"}) is Target.OWN
