"""Commands of Determined 0.38.1's `det` that ours lacked (issue 39, CLI parity), against a
live master: `template create|set-value config`, `user edit|rename`, `job update-batch` and
`workspace list-members`, with the real client's arguments and messages."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.auth import TokenStore, auth_file_path
from cli.client import canonicalize_master_url as canonical
from cli.commands.job_batch import parse_operation
from cli.commands.user_edit import to_bool
from cli.commands.workspace_members import member_rows
from cli.errors import CliError
from cli.main import app
from tests.cli.commands.conftest import (
    StartMaster,
    add_agent,
    det_for,
    experiment_yaml,
    fails,
    jobs,
    ok,
    queue_of,
    submit,
)
from tests.conftest import PASSWORD
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually


@pytest.mark.parametrize(
    ("operation", "update"),
    [
        ("abc.priority=7", {"jobId": "abc", "priority": 7}),
        ("abc.weight=2", {"jobId": "abc", "weight": 2.0}),
        ("abc.weight=0.5", {"jobId": "abc", "weight": 0.5}),
        ("abc.resource-pool=gpu", {"jobId": "abc", "resourcePool": "gpu"}),
        ("abc.resource_pool=gpu", {"jobId": "abc", "resourcePool": "gpu"}),
    ],
)
def test_parse_operation(operation: str, update: dict[str, object]) -> None:
    assert parse_operation(operation) == update


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        ("abc", "invalid format. Please ensure the update is formatted"),
        ("a.b.priority=1", "Invalid operation b.priority specified for job a"),
        ("abc.priority", "Please ensure the operation is formatted as <operation>=<value>"),
        ("abc.priority=1=2", "<operation>=<value>"),
        ("abc.color=red", "Invalid operation color specified for job abc"),
        ("abc.priority=high", "must be a number"),
    ],
)
def test_parse_operation_refuses(operation: str, message: str) -> None:
    with pytest.raises(CliError, match=message):
        parse_operation(operation)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("true", True), ("False", False), ("yes", True), ("0", False)],
)
def test_to_bool(value: str | None, expected: bool | None) -> None:
    assert to_bool(value) is expected


def test_member_rows() -> None:
    reply = {
        "groups": [{"groupId": 3, "name": "team"}],
        "usersAssignedDirectly": [{"id": 5, "username": "ann"}],
        "assignments": [
            {
                "role": {"name": "Editor"},
                "groupRoleAssignments": [{"groupId": 3}],
                "userRoleAssignments": [{"userId": 5}],
            },
            {"role": {"name": "Viewer"}, "userRoleAssignments": [{"userId": 5}]},
            {"role": None, "userRoleAssignments": [{"userId": 5}]},
        ],
    }
    assert member_rows(reply) == [
        ("team", "G", "Editor"),
        ("ann", "U", "Editor"),
        ("ann", "U", "Viewer"),
    ]
    assert member_rows({}) == []


async def test_template_create_and_set_value(start_master: StartMaster, tmp_path: Path) -> None:
    m = await start_master()
    det = det_for(m)
    body = tmp_path / "t.yaml"
    body.write_text("description: first\n")
    assert ok(await det("template", "create", "tpl", str(body))) == "Created template tpl\n"
    fails(await det("template", "create", "tpl", str(body)), "tpl")  # exists already
    ok(await det("workspace", "create", "ws1"))
    ok(await det("template", "create", "in-ws", str(body), "-w", "ws1"))
    ws_id = json.loads(ok(await det("workspace", "describe", "ws1", "--json")))["id"]
    assert (await m.get("/api/v1/templates/in-ws"))["template"]["workspaceId"] == ws_id
    fails(await det("template", "create", "x", str(body), "--workspace-name", "nope"), "nope")
    body.write_text("description: second\n")
    out = ok(await det("template", "set-value", "config", "tpl", str(body)))
    assert out == "Updated template tpl\n"
    assert (await m.get("/api/v1/templates/tpl"))["template"]["config"] == {"description": "second"}
    fails(await det("template", "set-value", "config", "missing", str(body)), "missing")


async def test_user_edit_and_rename(start_master: StartMaster) -> None:
    m = await start_master()
    det = det_for(m)
    ok(await det("user", "create", "bob", "--password", PASSWORD))
    out = ok(await det("user", "edit", "bob", "--display-name", "Bob B", "--admin", "true"))
    assert out == "Changes made to the following fields: Display Name, Admin\n"
    users = {u["username"]: u for u in (await m.get("/api/v1/users"))["users"]}
    assert (users["bob"]["displayName"], users["bob"]["admin"]) == ("Bob B", True)
    ok(await det("user", "edit", "bob", "--active", "false", "--admin", "false"))
    ok(await det("user", "rename", "bob", "robert"))
    users = {u["username"]: u for u in (await m.get("/api/v1/users"))["users"]}
    assert "bob" not in users
    assert (users["robert"]["active"], users["robert"]["admin"]) == (False, False)
    fails(await det("user", "edit", "robert"), "No field provided")
    fails(await det("user", "rename", "robert", "admin"), "already exists")
    fails(await det("user", "rename", "robert", "bad name!"), "invalid username")
    fails(await det("user", "edit", "robert", "--remote", "true"), "SSO")
    fails(await det("user", "rename", "nobody", "x"), "nobody")
    result = await det("user", "edit", "robert", "--admin", "maybe")
    assert result.exit_code == 2 and "true or false" in result.output


async def test_a_user_may_not_rename_themselves_or_others(start_master: StartMaster) -> None:
    m = await start_master()
    await m.post(
        "/api/v1/users", {"user": {"username": "eve", "active": True}, "password": PASSWORD}
    )
    eve = await m.login("eve", PASSWORD)
    users = {u["username"]: u["id"] for u in (await m.get("/api/v1/users"))["users"]}
    for target in ("eve", "admin"):
        r = await m.http.patch(
            f"/api/v1/users/{users[target]}", json={"username": "evil"}, headers=eve
        )
        assert r.status_code == 403, r.text
    r = await m.http.patch(
        f"/api/v1/users/{users['eve']}", json={"displayName": "Eve"}, headers=eve
    )
    assert r.status_code == 200, r.text
    r = await m.http.patch(
        f"/api/v1/users/{users['eve']}", json={"username": "a\x00b"}, headers=m.admin
    )
    assert r.status_code == 400, r.text
    r = await m.http.patch(
        f"/api/v1/users/{users['eve']}", json={"username": "x" * 300}, headers=m.admin
    )
    assert r.status_code == 400, r.text


async def test_job_update_batch(start_master: StartMaster, agents: list[FakeAgent]) -> None:
    m = await start_master(resource_manager={"scheduler": {"type": "fair_share"}})
    await add_agent(m, agents, "a1", 1)
    a = (await submit(m, experiment_yaml("one")))["experiment"]["jobId"]
    b = (await submit(m, experiment_yaml("two")))["experiment"]["jobId"]
    await queue_of(m, 2)
    det = det_for(m)
    assert ok(await det("job", "update-batch", f"{a}.weight=3", f"{b}.weight=0.5")) == ""

    async def weighted() -> bool:
        return {j["jobId"]: j["weight"] for j in await jobs(m)} == {a: 3, b: 0.5}

    await eventually(weighted, timeout=10)
    # One bad operation: none is sent.
    fails(await det("job", "update-batch", f"{a}.weight=2", f"{b}.colour=red"), "colour")
    fails(await det("job", "update-batch", "nosuchjob.weight=2"), "nosuchjob")
    assert {j["jobId"]: j["weight"] for j in await jobs(m)} == {a: 3, b: 0.5}


async def test_workspace_list_members(start_master: StartMaster) -> None:
    m = await start_master()
    det = det_for(m)
    ok(await det("workspace", "create", "team-ws"))
    ok(await det("user", "create", "ann", "--password", PASSWORD))
    ok(await det("rbac", "assign-role", "Editor", "-w", "team-ws", "-u", "ann"))
    out = ok(await det("workspace", "list-members", "team-ws", "--csv"))
    assert list(csv.reader(io.StringIO(out))) == [
        ["User/Group Name", "User/Group", "Role Name"],
        ["ann", "U", "Editor"],
    ]
    assert "ann" in ok(await det("workspace", "list-members", "team-ws"))
    reply = json.loads(ok(await det("workspace", "list-members", "team-ws", "--json")))
    assert reply["usersAssignedDirectly"][0]["username"] == "ann"
    assert "assignments:" in ok(await det("workspace", "list-members", "team-ws", "--yaml"))
    fails(await det("workspace", "list-members", "nope"), "nope")


async def test_user_list_all_logout_all_and_remote(start_master: StartMaster) -> None:
    m = await start_master()
    det = det_for(m)
    ok(await det("user", "create", "gone", "--password", PASSWORD))
    ok(await det("user", "deactivate", "gone"))
    assert "gone" not in ok(await det("user", "list"))
    assert "gone" in ok(await det("user", "list", "--all"))
    listed = json.loads(ok(await det("user", "list", "-a", "--json")))["users"]
    assert "gone" in [u["username"] for u in listed]
    fails(await det("user", "create", "sso-only", "--remote"), "SSO")
    users = [u["username"] for u in (await m.get("/api/v1/users"))["users"]]
    assert "sso-only" not in users

    # Two users logged in through the token store; --all logs both out.
    ok(await det("user", "create", "carl", "--password", PASSWORD))
    runner_env = {"DET_MASTER": m.url}
    for name in ("admin", "carl"):
        result = await asyncio.to_thread(
            CliRunner().invoke, app, ["user", "login", name], input=PASSWORD + "\n", env=runner_env
        )
        assert result.exit_code == 0, result.output
    store = TokenStore(auth_file_path())
    assert store.cached_users(canonical(m.url)) == ["admin", "carl"]
    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["user", "logout", "--all"], env=runner_env
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "Logged out user 'admin'\nLogged out user 'carl'\n"
    assert store.cached_users(canonical(m.url)) == []
