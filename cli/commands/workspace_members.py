"""`det workspace list-members NAME`: who holds which role on a workspace (GET
/api/v1/roles/workspace/{id}), as Determined 0.38.1's client prints it."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.commands.workspace import workspace_by_name
from cli.options import CsvOption, JsonOption, YamlOption
from cli.render import print_json, print_rows, print_yaml
from cli.session import open_session

HEADERS = ["User/Group Name", "User/Group", "Role Name"]


def member_rows(reply: dict[str, Any]) -> list[tuple[str, str, str]]:
    """One row per group ("G") or user ("U") assignment of each role."""
    groups = {g.get("groupId"): g.get("name") for g in reply.get("groups") or []}
    users = {u.get("id"): u.get("username") for u in reply.get("usersAssignedDirectly") or []}
    rows = []
    for assignment in reply.get("assignments") or []:
        role = (assignment.get("role") or {}).get("name")
        if not role:
            continue
        for g in assignment.get("groupRoleAssignments") or []:
            rows.append((str(groups.get(g.get("groupId"), g.get("groupId"))), "G", role))
        for u in assignment.get("userRoleAssignments") or []:
            rows.append((str(users.get(u.get("userId"), u.get("userId"))), "U", role))
    return rows


def list_members(
    ctx: typer.Context,
    workspace_name: Annotated[str, typer.Argument(help="Workspace name.")],
    as_json: JsonOption = False,
    as_yaml: YamlOption = False,
    as_csv: CsvOption = False,
) -> None:
    """List the users and groups with a role on the workspace."""
    client = open_session(ctx).client
    ws = workspace_by_name(client, workspace_name)
    reply = client.get(f"/api/v1/roles/workspace/{ws['id']}")
    if as_json:
        print_json(reply)
    elif as_yaml:
        print_yaml(reply)
    else:
        print_rows(HEADERS, member_rows(reply), as_csv=as_csv)
