"""`det rbac`: roles, role assignments and one's own permissions (Determined's `det rbac`,
same names and flags). Works whether or not the master has RBAC on; the assignments take
effect when it does (`security.authz.type: rbac`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.client import ApiClient
from cli.commands.user_group import group_id, user_ids
from cli.errors import CliError
from cli.options import JsonOption
from cli.pages import OffsetOption, Pages, PagesOption, fetch_post_pages
from cli.render import print_json, print_table
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)


def roles(client: ApiClient) -> list[dict[str, Any]]:
    return client.post("/api/v1/roles/search", {"limit": 0}).get("roles") or []


def role_id(client: ApiClient, name: str) -> int:
    for r in roles(client):
        if r.get("name") == name:
            return int(r["roleId"])
    known = ", ".join(str(r.get("name")) for r in roles(client))
    raise CliError(f"could not find role name {name} (roles: {known})")


def workspace_id(client: ApiClient, name: str) -> int:
    found = client.get("/api/v1/workspaces", {"nameCaseSensitive": name}).get("workspaces") or []
    exact = [w for w in found if w.get("name") == name]
    if len(exact) != 1:
        raise CliError(f"workspace '{name}' not found")
    return int(exact[0]["id"])


def workspace_names(client: ApiClient) -> dict[int, str]:
    """Names of the workspaces the caller may see (none where it may see none)."""
    try:
        listed = client.paginate("/api/v1/workspaces", "workspaces")
    except CliError:
        return {}
    return {int(w["id"]): w["name"] for w in listed}


def _permission_rows(role: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (p["id"], p.get("name"), "cluster" if not p["scopeTypeMask"]["workspace"] else "any")
        for p in role.get("permissions") or []
    ]


_PERM_HEADERS = ["Permission", "Name", "Scopes"]


@app.command("list-roles")
def list_roles(
    ctx: typer.Context,
    exclude_global_roles: Annotated[
        bool, typer.Option("--exclude-global-roles", help="Only roles a workspace may be given.")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=0, help="Roles per page (0: all).")] = 0,
    offset: OffsetOption = 0,
    pages: PagesOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the roles and their permissions."""
    client = open_session(ctx).client
    body: dict[str, Any] = {}
    if exclude_global_roles:
        body["workspaceId"] = 1
    path = "/api/v1/roles/search/by-assignability"
    roles, last = fetch_post_pages(
        client, path, "roles", body, limit=limit, offset=offset, pages=pages or Pages.all
    )
    data = {**last, "roles": roles}
    if as_json:
        print_json(data)
        return
    for r in data.get("roles") or []:
        typer.echo(f"role '{r['name']}' with ID {r['roleId']} with permissions")
        print_table(_PERM_HEADERS, _permission_rows(r))


@app.command("describe-role")
def describe_role(
    ctx: typer.Context,
    role_name: Annotated[str, typer.Argument(help="e.g. Editor")],
    as_json: JsonOption = False,
) -> None:
    """Show a role, its permissions and who holds it where."""
    client = open_session(ctx).client
    rid = role_id(client, role_name)
    data = client.post("/api/v1/roles/search/by-ids", {"roleIds": [rid]})["roles"][0]
    if as_json:
        print_json(data)
        return
    typer.echo(f"role '{data['role']['name']}' with ID {rid} with permissions")
    print_table(_PERM_HEADERS, _permission_rows(data["role"]))
    names = workspace_names(client)

    def where(a: dict[str, Any]) -> tuple[Any, Any, bool]:
        ws = a["roleAssignment"].get("scopeWorkspaceId")
        return ws, names.get(ws) if ws is not None else None, ws is None

    groups = data.get("groupRoleAssignments") or []
    print_table(
        ["Group ID", "Workspace ID", "Workspace", "Cluster-wide"],
        [(g["groupId"], *where(g)) for g in groups],
        title="assigned to groups",
    )
    users = data.get("userRoleAssignments") or []
    print_table(
        ["User ID", "Workspace ID", "Workspace", "Cluster-wide"],
        [(u["userId"], *where(u)) for u in users],
        title="assigned to users",
    )


def _assignment(
    ctx: typer.Context,
    role_name: str,
    workspace_name: str | None,
    username: str | None,
    group_name: str | None,
) -> tuple[ApiClient, dict[str, Any], str]:
    if (username is None) == (group_name is None):
        raise CliError("must provide exactly one of --username-to-assign or --group-name-to-assign")
    client = open_session(ctx).client
    scope: dict[str, Any] = {"role": {"roleId": role_id(client, role_name)}}
    if workspace_name:
        scope["scopeWorkspaceId"] = workspace_id(client, workspace_name)
    if username is not None:
        uid = user_ids(client, [username])[0]
        body = {"userRoleAssignments": [{"userId": uid, "roleAssignment": scope}]}
        who = f"user '{username}' with ID {uid}"
    else:
        gid = group_id(client, group_name or "")
        body = {"groupRoleAssignments": [{"groupId": gid, "roleAssignment": scope}]}
        who = f"group '{group_name}' with ID {gid}"
    where = f" to workspace {workspace_name}" if workspace_name else " globally"
    return client, body, f"{who}{where}"


WorkspaceOpt = Annotated[str | None, typer.Option("-w", "--workspace-name", help="Workspace.")]
UserOpt = Annotated[str | None, typer.Option("-u", "--username-to-assign", help="A user.")]
GroupOpt = Annotated[str | None, typer.Option("-g", "--group-name-to-assign", help="A group.")]


@app.command("assign-role")
def assign_role(
    ctx: typer.Context,
    role_name: Annotated[str, typer.Argument(help="e.g. Editor")],
    workspace_name: WorkspaceOpt = None,
    username_to_assign: UserOpt = None,
    group_name_to_assign: GroupOpt = None,
) -> None:
    """Assign a role to a user or a group, on a workspace or cluster-wide."""
    client, body, who = _assignment(
        ctx, role_name, workspace_name, username_to_assign, group_name_to_assign
    )
    client.post("/api/v1/roles/add-assignments", body)
    typer.echo(f"assigned role '{role_name}' to {who}")


@app.command("unassign-role")
def unassign_role(
    ctx: typer.Context,
    role_name: Annotated[str, typer.Argument(help="e.g. Editor")],
    workspace_name: WorkspaceOpt = None,
    username_to_assign: UserOpt = None,
    group_name_to_assign: GroupOpt = None,
) -> None:
    """Remove a role assignment from a user or a group."""
    client, body, who = _assignment(
        ctx, role_name, workspace_name, username_to_assign, group_name_to_assign
    )
    client.post("/api/v1/roles/remove-assignments", body)
    typer.echo(f"removed role '{role_name}' from {who}")


def _summary_rows(client: ApiClient, data: dict[str, Any]) -> list[tuple[Any, ...]]:
    names = {r["roleId"]: r.get("name") for r in data.get("roles") or []}
    assignments = data.get("assignments") or []
    workspaces = (
        workspace_names(client) if any(a.get("scopeWorkspaceIds") for a in assignments) else {}
    )
    rows: list[tuple[Any, ...]] = []
    for a in assignments:
        if a.get("scopeCluster"):
            rows.append((names.get(a["roleId"]), a["roleId"], "cluster-wide", ""))
        for ws in a.get("scopeWorkspaceIds") or []:
            rows.append((names.get(a["roleId"]), a["roleId"], ws, workspaces.get(ws, "")))
    return rows


@app.command("my-permissions")
def my_permissions(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """The roles you hold and where."""
    client = open_session(ctx).client
    data = client.get("/api/v1/permissions/summary")
    if as_json:
        print_json(data)
        return
    rows = _summary_rows(client, data)
    if not rows:
        typer.echo("no permissions assigned")
        return
    print_table(["Role", "Role ID", "Workspace ID", "Workspace"], rows)


@app.command("list-users-roles")
def list_users_roles(
    ctx: typer.Context,
    username: Annotated[str, typer.Argument(help="A user.")],
    as_json: JsonOption = False,
) -> None:
    """A user's roles: its own and its groups'."""
    client = open_session(ctx).client
    uid = user_ids(client, [username])[0]
    data = client.get(f"/api/v1/roles/search/by-user/{uid}")
    if as_json:
        print_json(data)
        return
    workspaces = workspace_names(client)
    rows = []
    for r in data.get("roles") or []:
        for kind, key in (("user", "userRoleAssignments"), ("group", "groupRoleAssignments")):
            for a in r.get(key) or []:
                ws = a["roleAssignment"].get("scopeWorkspaceId")
                via = "directly" if kind == "user" else f"group {a['groupId']}"
                scope = "cluster-wide" if ws is None else ws
                rows.append(
                    (r["role"]["name"], r["role"]["roleId"], via, scope, workspaces.get(ws, ""))
                )
    if not rows:
        typer.echo("user has no role assignments")
        return
    print_table(["Role", "Role ID", "Assigned", "Workspace ID", "Workspace"], rows)


@app.command("list-groups-roles")
def list_groups_roles(
    ctx: typer.Context,
    group_name: Annotated[str, typer.Argument(help="A group.")],
    as_json: JsonOption = False,
) -> None:
    """A group's roles and where."""
    client = open_session(ctx).client
    data = client.get(f"/api/v1/roles/search/by-group/{group_id(client, group_name)}")
    if as_json:
        print_json(data)
        return
    rows = _summary_rows(client, data)
    if not rows:
        typer.echo("group has no role assignments")
        return
    print_table(["Role", "Role ID", "Workspace ID", "Workspace"], rows)
