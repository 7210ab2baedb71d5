"""Every mutating route, for every kind of caller: only the owner of a named object (or an admin)
may change it.

One row per mutating route of the app (a test checks that none is missing). Each cell builds
fresh objects owned by a non-admin user, calls the route as one caller, and checks the outcome:
ALLOW is a 2xx, DENY a 403. The callers are columns of `CALLERS`; a new column (the owner's
task token, say) is one more name there, one more entry in each rule and in `World.headers`.

A live master on each database, with a fake agent so that trials really get allocations.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
from litestar import Litestar
from sqlalchemy import update

from controlplane.db.models import Template
from controlplane.db.session import make_engine
from controlplane.domain.proxy_ports import assigned_ports
from tests.conftest import PASSWORD, Master
from tests.controlplane.api.test_experiment_files_api import FILES
from tests.controlplane.services.scheduling.conftest import add_agent, experiment_yaml
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster, eventually

ALLOW, DENY = "allow", "deny"
CALLERS = ("owner", "other", "admin")

# Who may call a route; a mapping caller -> expected outcome.
OWNER_OR_ADMIN = {"owner": ALLOW, "other": DENY, "admin": ALLOW}
ADMIN_ONLY = {"owner": DENY, "other": DENY, "admin": ALLOW}
ANY_USER = {"owner": ALLOW, "other": ALLOW, "admin": ALLOW}
NOBODY = {"owner": DENY, "other": DENY, "admin": DENY}
# Refused to users; to an admin a 400 that says why (Kubernetes-only writes on an agent cluster).
ADMIN_400 = {"owner": DENY, "other": DENY, "admin": "HTTP 400"}


@dataclass
class Call:
    """What one cell sends; `as_owner` replaces the owner's headers (a user acting on itself)."""

    path: str
    json: Any = None
    as_owner: dict[str, str] | None = None
    fresh_login: bool = False  # the call spends the caller's token (logout)


@dataclass
class World:
    """The master, the three callers, and factories for objects the owner owns."""

    m: LiveMaster
    owner_name: str
    callers: dict[str, dict[str, str]]
    counter: itertools.count[int] = field(default_factory=itertools.count)

    def unique(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def headers(self, caller: str, call: Call) -> dict[str, str]:
        if caller == "owner" and call.as_owner is not None:
            return call.as_owner
        return self.callers[caller]

    async def experiment(self, *, active: bool = False) -> dict[str, Any]:
        """An experiment of the owner; paused (nothing runs) unless `active`."""
        r = await self.m.http.post(
            "/api/v1/experiments",
            json={"config": experiment_yaml(self.unique("exp")), "activate": active},
            headers=self.callers["owner"],
        )
        assert r.status_code == 200, r.text
        return r.json()["experiment"]

    async def trial(self, *, active: bool = False) -> dict[str, Any]:
        exp = await self.experiment(active=active)
        r = await self.m.http.get(f"/api/v1/experiments/{exp['id']}/trials", headers=self.admin)
        return r.json()["trials"][0]

    async def ended_experiment(self, *, archived: bool = False) -> int:
        exp_id = (await self.experiment())["id"]
        await self.m.post(f"/api/v1/experiments/{exp_id}/kill")
        if archived:
            await self.m.post(f"/api/v1/experiments/{exp_id}/archive")
        return exp_id

    async def allocation(self) -> str:
        """The allocation the fake agent runs for a new trial of the owner."""
        trial = await self.trial(active=True)

        async def placed() -> str | None:
            r = await self.m.http.get(f"/api/v1/tasks/{trial['taskId']}", headers=self.admin)
            allocations = r.json()["task"]["allocations"]
            return allocations[0]["allocationId"] if allocations else None

        return await eventually(placed, timeout=10)

    async def checkpoint(self) -> str:
        trial = await self.trial()
        ckpt = str(uuid.uuid4())
        body = {"uuid": ckpt, "resources": {"a": 1}, "training": {"trialId": trial["id"]}}
        r = await self.m.http.post("/api/v1/checkpoints", json=body, headers=self.admin)
        assert r.status_code == 200, r.text
        return ckpt

    async def template(self) -> str:
        name = self.unique("tpl")
        body = {"config": {"description": "the owner's"}}
        r = await self.m.http.post(
            f"/api/v1/templates/{name}", json=body, headers=self.callers["owner"]
        )
        assert r.status_code == 200, r.text
        return name

    async def command(self) -> str:
        body = {"config": {"entrypoint": ["sleep", "100"], "resources": {"slots": 0}}}
        r = await self.m.http.post("/api/v1/commands", json=body, headers=self.callers["owner"])
        assert r.status_code == 200, r.text
        return r.json()["command"]["id"]

    async def owned(self, path: str, body: dict[str, Any], key: str) -> dict[str, Any]:
        r = await self.m.http.post(path, json=body, headers=self.callers["owner"])
        assert r.status_code == 200, r.text
        return r.json()[key]

    async def workspace(self, *, archived: bool = False) -> int:
        ws = await self.owned("/api/v1/workspaces", {"name": self.unique("ws")}, "workspace")
        if archived:
            await self.m.post(f"/api/v1/workspaces/{ws['id']}/archive")
        return int(ws["id"])

    async def project(self, *, archived: bool = False) -> int:
        ws = await self.workspace()
        path = f"/api/v1/workspaces/{ws}/projects"
        p = await self.owned(path, {"name": self.unique("p")}, "project")
        if archived:
            await self.m.post(f"/api/v1/projects/{p['id']}/archive")
        return int(p["id"])

    async def model(self, *, archived: bool = False, versions: int = 0) -> str:
        name = self.unique("model ✓ ")
        await self.owned("/api/v1/models", {"name": name}, "model")
        for _ in range(versions):
            body = {"checkpointUuid": await self.checkpoint()}
            await self.owned(f"/api/v1/models/{quote(name)}/versions", body, "modelVersion")
        if archived:
            await self.m.post(f"/api/v1/models/{quote(name)}/archive")
        return quote(name)

    async def user(self) -> tuple[int, dict[str, str]]:
        """A new non-admin user and its headers: for routes whose object is a user."""
        name = self.unique("user")
        await self.m.post(
            "/api/v1/users", {"user": {"username": name, "active": True}, "password": PASSWORD}
        )
        r = await self.m.http.get(f"/api/v1/users/{name}/by-username", headers=self.admin)
        return r.json()["user"]["id"], await self.m.login(name, PASSWORD)

    @property
    def admin(self) -> dict[str, str]:
        return self.callers["admin"]


def metrics(steps: int) -> dict[str, Any]:
    return {
        "group": "training",
        "metrics": {"stepsCompleted": steps, "metrics": {"avgMetrics": {}}},
    }


async def _metrics(w: World) -> Call:
    t = await w.trial()
    return Call(f"/api/v1/trials/{t['id']}/metrics", metrics(1))


async def _metrics_batch(w: World) -> Call:
    t = await w.trial()
    return Call(f"/api/v1/trials/{t['id']}/metrics/batch", {"reports": [metrics(1)]})


async def _progress(w: World) -> Call:
    return Call(f"/api/v1/trials/{(await w.trial())['id']}/progress", {"progress": 0.5})


async def _runner(w: World) -> Call:
    t = await w.trial()
    return Call(f"/api/v1/trials/{t['id']}/runner/metadata", {"state": "validating"})


async def _early_exit(w: World) -> Call:
    t = await w.trial()
    return Call(
        f"/api/v1/trials/{t['id']}/early_exit", {"reason": "EXITED_REASON_USER_REQUESTED_STOP"}
    )


async def _kill_trial(w: World) -> Call:
    return Call(f"/api/v1/trials/{(await w.trial())['id']}/kill")


async def _run_start(w: World) -> Call:
    return Call("/api/v1/runs/start", {"runId": (await w.trial())["id"]})


async def _run_metadata(w: World) -> Call:
    t = await w.trial()
    return Call(f"/api/v1/runs/{t['id']}/metadata", {"metadata": {"k": 1}})


async def _alert(w: World) -> Call:
    t = await w.trial()
    body = {"experimentId": t["experimentId"], "trialId": t["id"], "data": {"title": "hi"}}
    return Call("/api/v1/webhooks/custom", body)


async def _report_checkpoint(w: World) -> Call:
    t = await w.trial()
    body = {"uuid": str(uuid.uuid4()), "resources": {"a": 1}, "training": {"trialId": t["id"]}}
    return Call("/api/v1/checkpoints", body)


async def _patch_checkpoints(w: World) -> Call:
    ckpt = await w.checkpoint()
    return Call("/api/v1/checkpoints", {"checkpoints": [{"uuid": ckpt, "resources": {}}]})


async def _delete_checkpoints(w: World) -> Call:
    return Call("/api/v1/checkpoints", {"checkpointUuids": [await w.checkpoint()]})


async def _remove_checkpoint_files(w: World) -> Call:
    body = {"checkpointUuids": [await w.checkpoint()], "checkpointGlobs": ["a"]}
    return Call("/api/v1/checkpoints/rm", body)


async def _protect_checkpoint(w: World) -> Call:
    return Call(f"/api/v1/checkpoints/{await w.checkpoint()}/protection", {"protected": True})


async def _checkpoint_gc(w: World) -> Call:
    return Call(f"/api/v1/experiments/{await w.ended_experiment()}/checkpoint_gc")


async def _cleanup_logs(w: World) -> Call:
    return Call("/api/v1/cleanup_logs")


async def _task_logs(w: World) -> Call:
    t = await w.trial()
    return Call("/api/v1/task/logs", {"logs": [{"taskId": t["taskId"], "log": "hello"}]})


_DETACHED = "name: detached\nsearcher: {name: single, metric: x, max_length: 1}\n"


async def _detached_experiment(w: World) -> dict[str, Any]:
    body = {"config": _DETACHED, "unmanaged": True}
    return await w.owned("/api/v1/experiments", body, "experiment")


async def _detached_trial(w: World) -> dict[str, Any]:
    exp = await _detached_experiment(w)
    return await w.owned("/api/v1/trials", {"experimentId": exp["id"], "unmanaged": True}, "trial")


async def _put_experiment(w: World) -> Call:
    path = f"/api/v1/experiments/by-external-id/{w.unique('run')}"
    return Call(path, {"config": _DETACHED, "unmanaged": True})


async def _create_trial(w: World) -> Call:
    exp = await _detached_experiment(w)
    return Call("/api/v1/trials", {"experimentId": exp["id"], "unmanaged": True})


async def _put_trial(w: World) -> Call:
    exp = await _detached_experiment(w)
    create = {"experimentId": exp["id"], "unmanaged": True}
    body = {"createTrialRequest": create, "externalTrialId": w.unique("t")}
    return Call("/api/v1/trials", body)


async def _start_trial(w: World) -> Call:
    t = await _detached_trial(w)
    return Call(f"/api/v1/trials/{t['id']}/start", {"trialId": t["id"], "resume": True})


async def _patch_trial(w: World) -> Call:
    t = await _detached_trial(w)
    return Call(f"/api/v1/trials/{t['id']}", {"trialId": t["id"], "state": "STATE_RUNNING"})


async def _fluent_logs(w: World) -> Call:
    t = await _detached_trial(w)
    return Call("/task-logs", [{"task_id": t["taskId"], "log": "hello\n", "rank": "0"}])


async def _ack(w: World) -> Call:
    return Call(f"/api/v1/allocations/{await w.allocation()}/signals/ack_preemption")


async def _accelerators(w: World) -> Call:
    alloc = await w.allocation()
    data = {"containerId": f"{alloc}-0", "acceleratorType": "cpu", "allocationId": alloc}
    return Call(
        f"/api/v1/allocations/{alloc}/acceleratorData",
        {"allocationId": alloc, "acceleratorData": data},
    )


async def _job_queue(w: World) -> Call:
    job_id = (await w.experiment())["jobId"]
    return Call("/api/v1/job-queues", {"updates": [{"jobId": job_id, "priority": 10}]})


async def _exp_verb(w: World, verb: str) -> Call:
    if verb == "archive":
        return Call(f"/api/v1/experiments/{await w.ended_experiment()}/archive")
    if verb == "unarchive":
        return Call(f"/api/v1/experiments/{await w.ended_experiment(archived=True)}/unarchive")
    return Call(f"/api/v1/experiments/{(await w.experiment())['id']}/{verb}")


async def _continue(w: World) -> Call:
    return Call("/api/v1/experiments/continue", {"id": await w.ended_experiment()})


async def _bulk(w: World, verb: str) -> Call:
    """A bulk action answers 200 to every caller: refusals are per experiment, in `results`
    (tests/controlplane/api/test_experiment_search_api.py checks those)."""
    if verb == "archive":
        exp_id = await w.ended_experiment()
    elif verb == "unarchive":
        exp_id = await w.ended_experiment(archived=True)
    else:
        exp_id = (await w.experiment())["id"]
    body: dict[str, Any] = {"experimentIds": [exp_id]}
    if verb == "move":
        body["destinationProjectId"] = 1
    return Call(f"/api/v1/experiments/{verb}", body)


async def _search(w: World) -> Call:
    return Call("/api/v1/experiments-search", {"limit": 10})


async def _patch_user(w: World) -> Call:
    user_id, headers = await w.user()
    return Call(f"/api/v1/users/{user_id}", {"displayName": "Someone"}, as_owner=headers)


async def _password(w: World) -> Call:
    user_id, headers = await w.user()
    return Call(f"/api/v1/users/{user_id}/password", PASSWORD, as_owner=headers)


async def _templates(w: World, action: str) -> Call:
    if action == "create":
        return Call(f"/api/v1/templates/{w.unique('new')}", {"config": {"a": 1}})
    return Call(f"/api/v1/templates/{await w.template()}", {"b": 2} if action == "patch" else None)


async def _login(w: World) -> Call:
    # Everyone logs in as the owner: login takes no token, so every caller may.
    body = {"username": w.owner_name, "password": PASSWORD}
    return Call("/api/v1/auth/login", body)


async def _logout(w: World) -> Call:
    return Call("/api/v1/auth/logout", fresh_login=True)


async def _patch_experiment(w: World) -> Call:
    exp_id = (await w.experiment())["id"]
    return Call(f"/api/v1/experiments/{exp_id}", {"notes": "mine", "description": "mine"})


async def _create_user(w: World) -> Call:
    return Call("/api/v1/users", {"user": {"username": w.unique("made")}, "password": PASSWORD})


async def _experiment(w: World) -> Call:
    return Call("/api/v1/experiments", {"config": experiment_yaml("new"), "activate": False})


async def _command(w: World) -> Call:
    return Call("/api/v1/commands", {"config": {"entrypoint": ["true"], "resources": {"slots": 0}}})


async def _kill_command(w: World) -> Call:
    return Call(f"/api/v1/commands/{await w.command()}/kill")


_GENERIC_TASK = {"config": "entrypoint: [sleep, '100']\nresources: {slots: 0}\n"}


async def _generic_task(w: World) -> Call:
    return Call("/api/v1/generic-tasks", {**_GENERIC_TASK, "contextDirectory": []})


async def _generic_task_verb(w: World, verb: str) -> Call:
    task = await w.owned(
        "/api/v1/generic-tasks", {**_GENERIC_TASK, "contextDirectory": []}, "taskId"
    )
    return Call(f"/api/v1/tasks/{task}/{verb}", {"taskId": task} if verb == "kill" else {})


async def _interactive(w: World, plural: str) -> Call:
    body: dict[str, Any] = {"config": {"resources": {"slots": 0}}}
    if plural == "tensorboards":
        body["experimentIds"] = [(await w.experiment())["id"]]
    return Call(f"/api/v1/{plural}", body)


async def _kill_interactive(w: World, plural: str) -> Call:
    made = await _interactive(w, plural)
    r = await w.m.http.post(made.path, json=made.json, headers=w.callers["owner"])
    assert r.status_code == 200, r.text
    singular = plural.removesuffix("s")
    return Call(f"/api/v1/{plural}/{r.json()[singular]['id']}/kill")


async def _set_priority(w: World, plural: str) -> Call:
    if plural == "commands":
        return Call(f"/api/v1/commands/{await w.command()}/set_priority", {"priority": 7})
    made = await _kill_interactive(w, plural)
    return Call(made.path.removesuffix("/kill") + "/set_priority", {"priority": 7})


async def _alloc_report(w: World, what: str) -> Call:
    allocation = await w.allocation()
    # a port the task was given (api/proxy_address): the route's rules are what is tested here
    port = assigned_ports(allocation.rsplit(".", 1)[0])[0]
    body = {"proxyAddress": f"127.0.0.1:{port}"} if what == "proxy_address" else None
    return Call(f"/api/v1/allocations/{allocation}/{what}", body)


async def _agent(w: World, verb: str) -> Call:
    return Call(f"/api/v1/agents/spare/{verb}", {"drain": True} if verb == "disable" else None)


async def _workspaces(w: World, action: str) -> Call:
    if action == "create":
        return Call("/api/v1/workspaces", {"name": w.unique("new")})
    ws = await w.workspace(archived=action == "unarchive")
    if action == "projects":
        return Call(f"/api/v1/workspaces/{ws}/projects", {"name": "p"})
    if action == "patch":
        return Call(f"/api/v1/workspaces/{ws}", {"name": w.unique("renamed")})
    return Call(f"/api/v1/workspaces/{ws}" + ("" if action == "delete" else f"/{action}"))


async def _projects(w: World, action: str) -> Call:
    p = await w.project(archived=action == "unarchive")
    if action == "patch":
        return Call(f"/api/v1/projects/{p}", {"description": "changed"})
    if action == "move":
        return Call(f"/api/v1/projects/{p}/move", {"destinationWorkspaceId": await w.workspace()})
    return Call(f"/api/v1/projects/{p}" + ("" if action == "delete" else f"/{action}"))


async def _move_experiment(w: World) -> Call:
    exp_id = (await w.experiment())["id"]
    return Call(f"/api/v1/experiments/{exp_id}/move", {"destinationProjectId": 1})


async def _models(w: World, action: str) -> Call:
    if action == "create":
        return Call("/api/v1/models", {"name": w.unique("new model ")})
    name = await w.model(archived=action == "unarchive", versions=1 if "version" in action else 0)
    base = f"/api/v1/models/{name}"
    calls = {
        "patch": Call(base, {"description": "changed"}),
        "delete": Call(base),
        "archive": Call(f"{base}/archive"),
        "unarchive": Call(f"{base}/unarchive"),
        "move": Call(f"{base}/move", {"destinationWorkspaceId": 1}),
        "register": Call(f"{base}/versions", {"checkpointUuid": await w.checkpoint()}),
        "patch version": Call(f"{base}/versions/1", {"notes": "changed"}),
        "delete version": Call(f"{base}/versions/1"),
    }
    return calls[action]


async def _groups(w: World, action: str) -> Call:
    """User groups and role assignments: managed by admins, read by anyone (RBAC off too)."""
    if action == "create":
        return Call("/api/v1/groups", {"name": w.unique("group ")})
    if action == "search":
        return Call("/api/v1/groups/search", {"limit": 10})
    group = (await w.m.post("/api/v1/groups", {"name": w.unique("made ")}))["group"]["groupId"]
    alice = (await w.m.get(f"/api/v1/users/{w.owner_name}/by-username"))["user"]["id"]
    if action == "update":
        return Call(f"/api/v1/groups/{group}", {"addUsers": [alice]})
    if action == "delete":
        return Call(f"/api/v1/groups/{group}")
    if action == "members":
        return Call("/api/v1/users/assignments", {"userIds": [alice], "addGroups": [group]})
    grant = {
        "groupRoleAssignments": [{"groupId": group, "roleAssignment": {"role": {"roleId": 4}}}]
    }
    if action == "unassign":
        await w.m.post("/api/v1/roles/add-assignments", grant)
    return Call(f"/api/v1/roles/{action.replace('unassign', 'remove').replace('assign', 'add')}"
                "-assignments", grant)  # fmt: skip


async def _pool_bindings(w: World, verb: str) -> Call:
    """Which workspaces may use the second pool (the default pool cannot be bound)."""
    ws = await w.workspace()
    if verb == "DELETE":  # unbinding needs a binding
        await w.m.post(_BINDINGS.format(BOUND_POOL), {"workspaceIds": [ws]})
    return Call(_BINDINGS.format(BOUND_POOL), {"workspaceIds": [ws]})


async def _roles_search(w: World, tail: str) -> Call:
    body: dict[str, Any] = {"roleIds": [4]} if tail == "/by-ids" else {"limit": 0}
    return Call(f"/api/v1/roles/search{tail}", body)


# --- Determined's remaining API (issue 39): tokens, policies, settings, runs, bulk by project --


async def _owner_id(w: World) -> int:
    r = await w.m.http.get(f"/api/v1/users/{w.owner_name}/by-username", headers=w.admin)
    return int(r.json()["user"]["id"])


async def _token(w: World, action: str) -> Call:
    if action == "create":
        return Call("/api/v1/tokens", {"userId": await _owner_id(w)})
    r = await w.m.http.post(
        "/api/v1/tokens", json={"userId": await _owner_id(w)}, headers=w.callers["owner"]
    )
    return Call(f"/api/v1/tokens/{r.json()['tokenId']}", {"description": "changed"})


async def _admin_call(w: World, what: str) -> Call:
    start = "2026-01-01T00:00:00Z"
    return {
        "master config": Call(
            "/api/v1/master/config",
            {"config": {"log": {"color": True}}, "fieldMask": {"paths": ["log.color"]}},
        ),
        "message": Call("/api/v1/master/cluster_message", {"message": "hi", "startTime": start}),
        "clear message": Call("/api/v1/master/cluster_message"),
        "users": Call("/api/v1/users", {"userIds": [await _owner_id(w)], "activate": True}),
        "slot enable": Call("/api/v1/agents/spare/slots/0/enable"),
        "slot disable": Call("/api/v1/agents/spare/slots/0/disable"),
        "global policy": Call(
            "/api/v1/config-policies/global/NTSC", {"configPolicies": "constraints: {}"}
        ),
        "delete global policy": Call("/api/v1/config-policies/global/NTSC"),
    }[what]


async def _ws_policy(w: World, verb: str) -> Call:
    ws = await w.workspace()
    body = {"configPolicies": "constraints: {}"} if verb == "PUT" else None
    return Call(f"/api/v1/config-policies/workspaces/{ws}/NTSC", body)


async def _kubernetes(w: World, path: str) -> Call:
    ws = await w.workspace()
    return Call(path.format(ws=ws), {} if "bulk" in path or "quota" in path else None)


async def _template_put(w: World, action: str) -> Call:
    name = await w.template()
    if action == "rename":
        return Call("/api/v1/template/rename", {"oldName": name, "newName": w.unique("renamed")})
    return Call(f"/api/v1/templates/{name}", {"config": {"description": "replaced"}})


async def _gather(w: World, what: str) -> Call:
    alloc = await w.allocation()
    body = {"allocationId": alloc, "requestUuid": w.unique("u"), "numPeers": 1, "data": {}}
    if what == "pending":
        return Call(f"/api/v1/allocations/{alloc}/signals/pending_preemption", {})
    return Call(f"/api/v1/allocations/{alloc}/{what}", body)


async def _project_bulk(w: World, verb: str) -> Call:
    """Per-experiment results, as the unscoped bulk actions: 200 for every caller."""
    exp = await w.experiment()
    body: dict[str, Any] = {"experimentIds": [exp["id"]]}
    if verb == "move":
        body["destinationProjectId"] = 1
    if verb == "retain_logs":
        body["numDays"] = 5
    return Call(f"/api/v1/projects/{exp['projectId']}/experiments/{verb}", body)


async def _notes(w: World, verb: str) -> Call:
    p = await w.project()
    note = {"name": "n", "contents": "c"}
    return Call(f"/api/v1/projects/{p}/notes", note if verb == "POST" else {"notes": [note]})


async def _runs(w: World, verb: str) -> Call:
    """Per-run results, as the bulk experiment actions: 200 for every caller."""
    t = await w.trial()
    if verb == "search":
        return Call("/api/v1/runs", {"projectId": 1})
    if verb == "move":
        return Call(
            "/api/v1/runs/move",
            {"runIds": [t["id"]], "sourceProjectId": 1, "destinationProjectId": 1},
        )
    return Call(f"/api/v1/runs/{verb}", {"runIds": [t["id"]]})


async def _older_metrics(w: World, kind: str) -> Call:
    t = await w.trial()
    body = {"stepsCompleted": 1, "metrics": {"avgMetrics": {}}}
    return Call(f"/api/v1/trials/{t['id']}/{kind}_metrics", {f"{kind}Metrics": body})


async def _own_settings(w: World, what: str) -> Call:
    if what == "activity":
        return Call(
            "/api/v1/users/activity",
            {"activityType": "ACTIVITY_TYPE_GET", "entityType": "ENTITY_TYPE_PROJECT",
             "entityId": 1},
        )  # fmt: skip
    if what == "reset":
        return Call("/api/v1/users/setting/reset")
    return Call("/api/v1/users/setting", {"settings": [{"key": "k", "value": "v"}]})


async def _pin(w: World, verb: str) -> Call:
    return Call(f"/api/v1/workspaces/{await w.workspace()}/{verb}")


async def _idle(w: World) -> Call:
    r = await w.m.http.post("/api/v1/notebooks", json={"config": {}}, headers=w.callers["owner"])
    assert r.status_code == 200, r.text
    return Call(f"/api/v1/notebooks/{r.json()['notebook']['id']}/report_idle", {"idle": False})


async def _retain(w: World, what: str) -> Call:
    t = await w.trial()
    if what == "trial":
        return Call(f"/api/v1/trials/{t['id']}/retain_logs", {"numDays": 3})
    return Call(f"/api/v1/experiments/{t['experimentId']}/retain_logs", {"numDays": 3})


# --- experiment labels, deletion, files; checkpoint metadata; trial sources; search preview --


async def _labels(w: World, verb: str) -> Call:
    exp = await w.experiment()
    return Call(f"/api/v1/experiments/{exp['id']}/labels/some-label")


async def _delete_experiment(w: World, what: str) -> Call:
    exp_id = await w.ended_experiment()
    if what == "tensorboard":
        return Call(f"/api/v1/experiments/{exp_id}/tensorboard-files")
    if what == "bulk":
        return Call("/api/v1/projects/1/experiments/delete", {"experimentIds": [exp_id]})
    return Call(f"/api/v1/experiments/{exp_id}")


async def _experiment_file(w: World) -> Call:
    """A read sent as POST (Determined's GetModelDefFile): anyone who may view it."""
    r = await w.m.http.post(
        "/api/v1/experiments",
        json={"config": experiment_yaml(w.unique("files")), "activate": False,
              "modelDefinition": FILES},
        headers=w.callers["owner"],
    )  # fmt: skip
    assert r.status_code == 200, r.text
    return Call(f"/api/v1/experiments/{r.json()['experiment']['id']}/file", {"path": "train.py"})


async def _checkpoint_metadata(w: World) -> Call:
    ckpt = await w.checkpoint()
    body = {"checkpoint": {"uuid": ckpt, "metadata": {"k": 1}, "resources": {}, "training": {},
                           "state": "STATE_UNSPECIFIED"}}  # fmt: skip
    return Call(f"/api/v1/checkpoints/{ckpt}/metadata", body)


async def _trial_source(w: World) -> Call:
    ckpt = await w.checkpoint()
    trial = await w.trial()
    info = {"trialId": trial["id"], "checkpointUuid": ckpt,
            "trialSourceInfoType": "TRIAL_SOURCE_INFO_TYPE_INFERENCE"}  # fmt: skip
    return Call("/api/v1/trial-source-info", {"trialSourceInfo": info})


async def _preview(w: World) -> Call:
    searcher = {"name": "random", "metric": "loss", "max_trials": 3}
    lr = {"type": "double", "minval": 0.1, "maxval": 1}
    config = {"searcher": searcher, "hyperparameters": {"lr": lr}}
    return Call("/api/v1/preview-hp-search", {"config": config})


Make = Callable[[World], Awaitable[Call]]


async def _webhooks(w: World, action: str) -> Call:
    """A webhook of the owner's workspace (services/webhooks.py: its owner or an admin)."""
    ws = await w.workspace()
    body = {
        "url": "http://127.0.0.1:9/hook",  # the discard port: a test send is refused at once
        "webhookType": "WEBHOOK_TYPE_DEFAULT",
        "mode": "WEBHOOK_MODE_WORKSPACE",
        "name": "",
        "workspaceId": ws,
        "triggers": [{"triggerType": "TRIGGER_TYPE_CUSTOM", "condition": {}}],
    }
    if action == "create":
        return Call("/api/v1/webhooks", body)
    hook = await w.owned("/api/v1/webhooks", body, "webhook")
    base = f"/api/v1/webhooks/{hook['id']}"
    calls = {
        "patch": Call(base, {"url": "http://127.0.0.1:9/moved"}),
        "delete": Call(base),
        "test": Call(f"{base}/test"),
    }
    return calls[action]


def _bind(make: Callable[[World, str], Awaitable[Call]], arg: str) -> Make:
    async def bound(w: World) -> Call:
        return await make(w, arg)

    return bound


_WS = "/api/v1/workspaces/{workspace_id:int}"
_PROJECT = "/api/v1/projects/{project_id:int}"
_MODEL = "/api/v1/models/{model_name:str}"
_BINDINGS = "/api/v1/resource-pools/{}/workspace-bindings"
BOUND_POOL = "bound"  # a pool with no agent, bound and unbound by the binding rows

# (method, the app's route path) -> (who may, how to build the call).
TABLE: dict[tuple[str, str], tuple[dict[str, str], Make]] = {
    ("POST", "/api/v1/auth/login"): (ANY_USER, _login),
    ("POST", "/api/v1/auth/logout"): (ANY_USER, _logout),
    ("POST", "/api/v1/agents/{agent_id:str}/enable"): (ADMIN_ONLY, _bind(_agent, "enable")),
    ("POST", "/api/v1/agents/{agent_id:str}/disable"): (ADMIN_ONLY, _bind(_agent, "disable")),
    ("POST", "/api/v1/job-queues"): (OWNER_OR_ADMIN, _job_queue),
    ("POST", "/api/v1/users"): (ADMIN_ONLY, _create_user),
    ("PATCH", "/api/v1/users/{user_id:int}"): (OWNER_OR_ADMIN, _patch_user),
    ("POST", "/api/v1/users/{user_id:int}/password"): (OWNER_OR_ADMIN, _password),
    ("POST", "/api/v1/experiments"): (ANY_USER, _experiment),
    ("PATCH", "/api/v1/experiments/{experiment_id:int}"): (OWNER_OR_ADMIN, _patch_experiment),
    ("POST", "/api/v1/experiments/continue"): (OWNER_OR_ADMIN, _continue),
    **{
        ("POST", f"/api/v1/experiments/{{experiment_id:int}}/{verb}"): (
            OWNER_OR_ADMIN,
            _bind(_exp_verb, verb),
        )
        for verb in ("pause", "activate", "kill", "cancel", "archive", "unarchive")
    },
    **{
        ("POST", f"/api/v1/experiments/{verb}"): (ANY_USER, _bind(_bulk, verb))
        for verb in ("pause", "activate", "kill", "cancel", "archive", "unarchive", "move")
    },
    ("POST", "/api/v1/experiments-search"): (ANY_USER, _search),
    ("POST", "/api/v1/trials/{trial_id:int}/metrics"): (OWNER_OR_ADMIN, _metrics),
    ("POST", "/api/v1/trials/{trial_id:int}/metrics/batch"): (OWNER_OR_ADMIN, _metrics_batch),
    ("POST", "/api/v1/trials/{trial_id:int}/progress"): (OWNER_OR_ADMIN, _progress),
    ("POST", "/api/v1/trials/{trial_id:int}/runner/metadata"): (OWNER_OR_ADMIN, _runner),
    ("POST", "/api/v1/trials/{trial_id:int}/early_exit"): (OWNER_OR_ADMIN, _early_exit),
    ("POST", "/api/v1/trials/{trial_id:int}/kill"): (OWNER_OR_ADMIN, _kill_trial),
    ("POST", "/api/v1/runs/start"): (OWNER_OR_ADMIN, _run_start),
    ("POST", "/api/v1/runs/{run_id:int}/metadata"): (OWNER_OR_ADMIN, _run_metadata),
    ("POST", "/api/v1/webhooks/custom"): (OWNER_OR_ADMIN, _alert),
    ("POST", "/api/v1/checkpoints"): (OWNER_OR_ADMIN, _report_checkpoint),
    ("PATCH", "/api/v1/checkpoints"): (OWNER_OR_ADMIN, _patch_checkpoints),
    ("POST", "/api/v1/task/logs"): (OWNER_OR_ADMIN, _task_logs),
    ("PUT", "/api/v1/experiments/by-external-id/{external_experiment_id:str}"): (
        ANY_USER,
        _put_experiment,
    ),
    ("POST", "/api/v1/trials"): (OWNER_OR_ADMIN, _create_trial),
    ("PUT", "/api/v1/trials"): (OWNER_OR_ADMIN, _put_trial),
    ("POST", "/api/v1/trials/{trial_id:int}/start"): (OWNER_OR_ADMIN, _start_trial),
    ("PATCH", "/api/v1/trials/{trial_id:int}"): (OWNER_OR_ADMIN, _patch_trial),
    ("POST", "/task-logs"): (OWNER_OR_ADMIN, _fluent_logs),
    ("DELETE", "/api/v1/checkpoints"): (OWNER_OR_ADMIN, _delete_checkpoints),
    ("POST", "/api/v1/checkpoints/rm"): (OWNER_OR_ADMIN, _remove_checkpoint_files),
    ("PUT", "/api/v1/checkpoints/{checkpoint_uuid:str}/protection"): (
        OWNER_OR_ADMIN,
        _protect_checkpoint,
    ),
    ("POST", "/api/v1/experiments/{experiment_id:int}/checkpoint_gc"): (
        OWNER_OR_ADMIN,
        _checkpoint_gc,
    ),
    ("POST", "/api/v1/cleanup_logs"): (ADMIN_ONLY, _cleanup_logs),
    **{
        (verb, _BINDINGS.format("{pool_name:str}")): (ADMIN_ONLY, _bind(_pool_bindings, verb))
        for verb in ("POST", "DELETE", "PUT")
    },
    ("POST", "/api/v1/groups"): (ADMIN_ONLY, _bind(_groups, "create")),
    ("POST", "/api/v1/groups/search"): (ANY_USER, _bind(_groups, "search")),
    ("PUT", "/api/v1/groups/{group_id:int}"): (ADMIN_ONLY, _bind(_groups, "update")),
    ("DELETE", "/api/v1/groups/{group_id:int}"): (ADMIN_ONLY, _bind(_groups, "delete")),
    ("PATCH", "/api/v1/users/assignments"): (ADMIN_ONLY, _bind(_groups, "members")),
    ("POST", "/api/v1/roles/add-assignments"): (ADMIN_ONLY, _bind(_groups, "assign")),
    ("POST", "/api/v1/roles/remove-assignments"): (ADMIN_ONLY, _bind(_groups, "unassign")),
    **{
        ("POST", f"/api/v1/roles/search{tail}"): (ANY_USER, _bind(_roles_search, tail))
        for tail in ("", "/by-ids", "/by-assignability")
    },
    ("POST", "/api/v1/allocations/{allocation_id:str}/signals/ack_preemption"): (
        OWNER_OR_ADMIN,
        _ack,
    ),
    ("POST", "/api/v1/allocations/{allocation_id:str}/acceleratorData"): (
        OWNER_OR_ADMIN,
        _accelerators,
    ),
    ("POST", "/api/v1/commands"): (ANY_USER, _command),
    ("POST", "/api/v1/commands/{command_id:str}/kill"): (OWNER_OR_ADMIN, _kill_command),
    ("POST", "/api/v1/generic-tasks"): (ANY_USER, _generic_task),
    **{
        ("POST", f"/api/v1/tasks/{{task_id:str}}/{verb}"): (
            OWNER_OR_ADMIN,
            _bind(_generic_task_verb, verb),
        )
        for verb in ("kill", "pause", "unpause")
    },
    **{
        ("POST", f"/api/v1/{plural}"): (ANY_USER, _bind(_interactive, plural))
        for plural in ("notebooks", "tensorboards", "shells")
    },
    **{
        ("POST", f"/api/v1/{plural}/{{{plural[:-1]}_id:str}}/kill"): (
            OWNER_OR_ADMIN,
            _bind(_kill_interactive, plural),
        )
        for plural in ("notebooks", "tensorboards", "shells")
    },
    **{
        ("POST", f"/api/v1/{plural}/{{{plural[:-1]}_id:str}}/set_priority"): (
            OWNER_OR_ADMIN,
            _bind(_set_priority, plural),
        )
        for plural in ("commands", "notebooks", "tensorboards", "shells")
    },
    # Only the allocation's own task reports where its service answers and that it is ready.
    **{
        ("POST", f"/api/v1/allocations/{{allocation_id:str}}/{what}"): (
            NOBODY,
            _bind(_alloc_report, what),
        )
        for what in ("proxy_address", "ready")
    },
    ("POST", "/api/v1/templates/{template_name:str}"): (ANY_USER, _bind(_templates, "create")),
    ("PATCH", "/api/v1/templates/{template_name:str}"): (
        OWNER_OR_ADMIN,
        _bind(_templates, "patch"),
    ),
    ("DELETE", "/api/v1/templates/{template_name:str}"): (
        OWNER_OR_ADMIN,
        _bind(_templates, "delete"),
    ),
    ("POST", "/api/v1/workspaces"): (ANY_USER, _bind(_workspaces, "create")),
    ("PATCH", _WS): (OWNER_OR_ADMIN, _bind(_workspaces, "patch")),
    ("DELETE", _WS): (OWNER_OR_ADMIN, _bind(_workspaces, "delete")),
    ("POST", f"{_WS}/archive"): (OWNER_OR_ADMIN, _bind(_workspaces, "archive")),
    ("POST", f"{_WS}/unarchive"): (OWNER_OR_ADMIN, _bind(_workspaces, "unarchive")),
    ("POST", f"{_WS}/projects"): (ANY_USER, _bind(_workspaces, "projects")),
    ("PATCH", _PROJECT): (OWNER_OR_ADMIN, _bind(_projects, "patch")),
    ("DELETE", _PROJECT): (OWNER_OR_ADMIN, _bind(_projects, "delete")),
    ("POST", f"{_PROJECT}/archive"): (OWNER_OR_ADMIN, _bind(_projects, "archive")),
    ("POST", f"{_PROJECT}/unarchive"): (OWNER_OR_ADMIN, _bind(_projects, "unarchive")),
    ("POST", f"{_PROJECT}/move"): (OWNER_OR_ADMIN, _bind(_projects, "move")),
    ("POST", "/api/v1/experiments/{experiment_id:int}/move"): (OWNER_OR_ADMIN, _move_experiment),
    ("POST", "/api/v1/models"): (ANY_USER, _bind(_models, "create")),
    ("PATCH", _MODEL): (OWNER_OR_ADMIN, _bind(_models, "patch")),
    ("DELETE", _MODEL): (OWNER_OR_ADMIN, _bind(_models, "delete")),
    ("POST", f"{_MODEL}/archive"): (OWNER_OR_ADMIN, _bind(_models, "archive")),
    ("POST", f"{_MODEL}/unarchive"): (OWNER_OR_ADMIN, _bind(_models, "unarchive")),
    ("POST", f"{_MODEL}/move"): (OWNER_OR_ADMIN, _bind(_models, "move")),
    ("POST", f"{_MODEL}/versions"): (OWNER_OR_ADMIN, _bind(_models, "register")),
    ("PATCH", f"{_MODEL}/versions/{{version:int}}"): (
        OWNER_OR_ADMIN,
        _bind(_models, "patch version"),
    ),
    ("DELETE", f"{_MODEL}/versions/{{version:int}}"): (
        OWNER_OR_ADMIN,
        _bind(_models, "delete version"),
    ),
    ("POST", "/api/v1/webhooks"): (OWNER_OR_ADMIN, _bind(_webhooks, "create")),
    ("PATCH", "/api/v1/webhooks/{webhook_id:int}"): (OWNER_OR_ADMIN, _bind(_webhooks, "patch")),
    ("DELETE", "/api/v1/webhooks/{webhook_id:int}"): (OWNER_OR_ADMIN, _bind(_webhooks, "delete")),
    ("POST", "/api/v1/webhooks/{webhook_id:int}/test"): (OWNER_OR_ADMIN, _bind(_webhooks, "test")),
    ("POST", "/api/v1/tokens"): (OWNER_OR_ADMIN, _bind(_token, "create")),
    ("PATCH", "/api/v1/tokens/{token_id:int}"): (OWNER_OR_ADMIN, _bind(_token, "patch")),
    ("PATCH", "/api/v1/master/config"): (ADMIN_ONLY, _bind(_admin_call, "master config")),
    ("PUT", "/api/v1/master/cluster_message"): (ADMIN_ONLY, _bind(_admin_call, "message")),
    ("DELETE", "/api/v1/master/cluster_message"): (
        ADMIN_ONLY,
        _bind(_admin_call, "clear message"),
    ),
    ("PATCH", "/api/v1/users"): (ADMIN_ONLY, _bind(_admin_call, "users")),
    ("POST", "/api/v1/agents/{agent_id:str}/slots/{slot_id:str}/enable"): (
        ADMIN_ONLY,
        _bind(_admin_call, "slot enable"),
    ),
    ("POST", "/api/v1/agents/{agent_id:str}/slots/{slot_id:str}/disable"): (
        ADMIN_ONLY,
        _bind(_admin_call, "slot disable"),
    ),
    ("PUT", "/api/v1/config-policies/global/{workload_type:str}"): (
        ADMIN_ONLY,
        _bind(_admin_call, "global policy"),
    ),
    ("DELETE", "/api/v1/config-policies/global/{workload_type:str}"): (
        ADMIN_ONLY,
        _bind(_admin_call, "delete global policy"),
    ),
    **{
        (verb, "/api/v1/config-policies/workspaces/{workspace_id:int}/{workload_type:str}"): (
            ADMIN_ONLY,
            _bind(_ws_policy, verb),
        )
        for verb in ("PUT", "DELETE")
    },
    # Kubernetes-only writes: refused to users; an admin learns the cluster has no Kubernetes
    **{
        (method, path): (ADMIN_400, _bind(_kubernetes, fill))
        for method, path, fill in (
            ("POST", f"{_WS}/namespace-bindings", "/api/v1/workspaces/{ws}/namespace-bindings"),
            ("DELETE", f"{_WS}/namespace-bindings", "/api/v1/workspaces/{ws}/namespace-bindings"),
            ("POST", f"{_WS}/set-resource-quota", "/api/v1/workspaces/{ws}/set-resource-quota"),
            (
                "POST",
                "/api/v1/namespace-bindings/bulk-auto-create",
                "/api/v1/namespace-bindings/bulk-auto-create",
            ),
        )
    },
    ("PUT", "/api/v1/templates/{template_name:str}"): (OWNER_OR_ADMIN, _bind(_template_put, "put")),
    ("PATCH", "/api/v1/template/rename"): (OWNER_OR_ADMIN, _bind(_template_put, "rename")),
    ("POST", "/api/v1/allocations/{allocation_id:str}/all_gather"): (
        OWNER_OR_ADMIN,
        _bind(_gather, "all_gather"),
    ),
    ("POST", "/api/v1/allocations/{allocation_id:str}/notify_container_running"): (
        OWNER_OR_ADMIN,
        _bind(_gather, "notify_container_running"),
    ),
    ("POST", "/api/v1/allocations/{allocation_id:str}/signals/pending_preemption"): (
        OWNER_OR_ADMIN,
        _bind(_gather, "pending"),
    ),
    **{
        ("POST", f"{_PROJECT}/experiments/{verb}"): (ANY_USER, _bind(_project_bulk, verb))
        for verb in ("activate", "archive", "cancel", "kill", "move", "pause", "unarchive")
    },
    ("PUT", f"{_PROJECT}/experiments/retain_logs"): (
        ANY_USER,
        _bind(_project_bulk, "retain_logs"),
    ),
    ("POST", f"{_PROJECT}/notes"): (OWNER_OR_ADMIN, _bind(_notes, "POST")),
    ("PUT", f"{_PROJECT}/notes"): (OWNER_OR_ADMIN, _bind(_notes, "PUT")),
    ("POST", "/api/v1/runs"): (ANY_USER, _bind(_runs, "search")),
    **{
        ("POST", f"/api/v1/runs/{verb}"): (ANY_USER, _bind(_runs, verb))
        for verb in ("kill", "pause", "resume", "archive", "unarchive", "move", "delete")
    },
    ("POST", "/api/v1/trials/{trial_id:int}/training_metrics"): (
        OWNER_OR_ADMIN,
        _bind(_older_metrics, "training"),
    ),
    ("POST", "/api/v1/trials/{trial_id:int}/validation_metrics"): (
        OWNER_OR_ADMIN,
        _bind(_older_metrics, "validation"),
    ),
    ("POST", "/api/v1/users/activity"): (ANY_USER, _bind(_own_settings, "activity")),
    ("POST", "/api/v1/users/setting"): (ANY_USER, _bind(_own_settings, "setting")),
    ("POST", "/api/v1/users/setting/reset"): (ANY_USER, _bind(_own_settings, "reset")),
    ("POST", f"{_WS}/pin"): (ANY_USER, _bind(_pin, "pin")),
    ("POST", f"{_WS}/unpin"): (ANY_USER, _bind(_pin, "unpin")),
    ("PUT", "/api/v1/experiments/{experiment_id:int}/labels/{label:path}"): (
        OWNER_OR_ADMIN,
        _bind(_labels, "PUT"),
    ),
    ("DELETE", "/api/v1/experiments/{experiment_id:int}/labels/{label:path}"): (
        OWNER_OR_ADMIN,
        _bind(_labels, "DELETE"),
    ),
    ("DELETE", "/api/v1/experiments/{experiment_id:int}"): (
        OWNER_OR_ADMIN,
        _bind(_delete_experiment, "one"),
    ),
    ("DELETE", "/api/v1/experiments/{experiment_id:int}/tensorboard-files"): (
        OWNER_OR_ADMIN,
        _bind(_delete_experiment, "tensorboard"),
    ),
    ("DELETE", f"{_PROJECT}/experiments/delete"): (ANY_USER, _bind(_delete_experiment, "bulk")),
    ("POST", "/api/v1/experiments/{experiment_id:int}/file"): (ANY_USER, _experiment_file),
    ("POST", "/api/v1/checkpoints/{checkpoint_uuid:str}/metadata"): (
        OWNER_OR_ADMIN,
        _checkpoint_metadata,
    ),
    ("POST", "/api/v1/trial-source-info"): (OWNER_OR_ADMIN, _trial_source),
    ("POST", "/api/v1/preview-hp-search"): (ANY_USER, _preview),
    ("PUT", "/api/v1/notebooks/{notebook_id:str}/report_idle"): (OWNER_OR_ADMIN, _idle),
    ("PUT", "/api/v1/trials/{trial_id:int}/retain_logs"): (OWNER_OR_ADMIN, _bind(_retain, "trial")),
    ("PUT", "/api/v1/experiments/{experiment_id:int}/retain_logs"): (
        OWNER_OR_ADMIN,
        _bind(_retain, "experiment"),
    ),
}


def mutating_routes(app: Litestar) -> set[tuple[str, str]]:
    return {
        (method, route.path)
        for route in app.routes
        for method in getattr(route, "methods", ())
        if method not in {"GET", "HEAD", "OPTIONS"}
    }


def test_every_rule_names_every_caller() -> None:
    for key, (rule, _) in TABLE.items():
        assert set(rule) == set(CALLERS), key


async def _world(m: LiveMaster, agents: list[FakeAgent]) -> World:
    await add_agent(m, agents, "a1", 64)
    await add_agent(m, agents, "spare", 1)
    await m.post("/api/v1/users", {"user": {"username": "alice"}, "password": PASSWORD})
    callers = {
        "owner": await m.login("alice", PASSWORD),
        "other": await m.login("determined", PASSWORD),
        "admin": m.admin,
    }
    return World(m=m, owner_name="alice", callers=callers)


async def _run_cell(w: World, method: str, call: Call, caller: str) -> int:
    headers = w.headers(caller, call)
    if call.fresh_login:
        username = {"owner": w.owner_name, "other": "determined", "admin": "admin"}[caller]
        headers = await w.m.login(username, PASSWORD)
    kwargs: dict[str, Any] = {} if call.json is None else {"json": call.json}
    r = await w.m.http.request(method, call.path, headers=headers, **kwargs)
    return r.status_code


@pytest.mark.timeout(900)  # ~180 cells, each with objects of its own, on a 2-CPU machine
async def test_only_owners_and_admins_change_named_objects(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(resource_pools=[{"pool_name": "default"}, {"pool_name": BOUND_POOL}])
    missing = mutating_routes(m.app) - set(TABLE)
    assert not missing, f"mutating routes without a row in TABLE: {sorted(missing)}"
    w = await _world(m, agents)
    wrong: list[str] = []
    for (method, route), (rule, make) in TABLE.items():
        for caller in CALLERS:
            call = await make(w)
            status = await _run_cell(w, method, call, caller)
            got = ALLOW if 200 <= status < 300 else DENY if status == 403 else f"HTTP {status}"
            if got != rule[caller]:
                wrong.append(f"{method} {route} as {caller}: want {rule[caller]}, got {got}")
    assert not wrong, "\n".join(wrong)


async def test_a_checkpoint_of_no_trial_is_changed_only_by_an_admin(master: Master) -> None:
    """Only an admin may report a checkpoint that names no trial, so only an admin owns it."""
    ckpt = str(uuid.uuid4())
    body = {"uuid": ckpt, "resources": {"a": 1}}
    r = await master.client.post("/api/v1/checkpoints", json=body, headers=master.admin)
    assert r.status_code == 200, r.text
    patch = {"checkpoints": [{"uuid": ckpt, "resources": {}}]}
    r = await master.client.patch("/api/v1/checkpoints", json=patch, headers=master.user)
    assert r.status_code == 403, r.text
    r = await master.client.get(f"/api/v1/checkpoints/{ckpt}", headers=master.user)
    assert r.json()["checkpoint"]["state"] == "STATE_COMPLETED"
    r = await master.client.patch("/api/v1/checkpoints", json=patch, headers=master.admin)
    assert r.status_code == 200, r.text


async def test_a_template_from_before_owners_is_changed_only_by_an_admin(
    master: Master, db_url: str
) -> None:
    r = await master.client.post(
        "/api/v1/templates/old", json={"config": {"a": 1}}, headers=master.user
    )
    assert r.status_code == 200, r.text
    engine = make_engine(db_url)  # the app's own engine lives on the test client's loop
    try:
        async with engine.begin() as conn:
            await conn.execute(update(Template).values(owner_id=None))
    finally:
        await engine.dispose()
    r = await master.client.patch("/api/v1/templates/old", json={"b": 2}, headers=master.user)
    assert r.status_code == 403, r.text
    r = await master.client.delete("/api/v1/templates/old", headers=master.admin)
    assert r.status_code == 200, r.text
