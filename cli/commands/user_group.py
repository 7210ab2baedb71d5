"""`det user-group`: user groups (Determined's `det user-group`, same names and arguments)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.client import ApiClient
from cli.errors import CliError
from cli.options import JsonOption
from cli.pages import Pages, PagesOption, fetch_post_pages
from cli.render import print_json, print_table
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)


def user_ids(client: ApiClient, usernames: list[str]) -> list[int]:
    """The ids of `usernames`, in order; every unknown name is named in the error."""
    users = client.paginate("/api/v1/users", "users")
    by_name = {u.get("username"): u.get("id") for u in users}
    missing = [n for n in usernames if n not in by_name]
    if missing:
        raise CliError(f"could not find users for usernames {', '.join(missing)}")
    return [int(by_name[n]) for n in usernames]


def group_id(client: ApiClient, name: str) -> int:
    found = client.post("/api/v1/groups/search", {"name": name, "limit": 1}).get("groups") or []
    if len(found) != 1:
        raise CliError(f"could not find user group name {name}")
    return int(found[0]["group"]["groupId"])


def _split(usernames: str) -> list[str]:
    return [n.strip() for n in usernames.split(",") if n.strip()]


@app.command("create")
def create(
    ctx: typer.Context,
    group_name: Annotated[str, typer.Argument(help="Name of the group.")],
    add_user: Annotated[
        list[str] | None, typer.Option("--add-user", help="A member (repeatable).")
    ] = None,
) -> None:
    """Create a user group."""
    client = open_session(ctx).client
    ids = user_ids(client, add_user or [])
    group = client.post("/api/v1/groups", {"name": group_name, "addUsers": ids})["group"]
    typer.echo(f"user group with name {group['name']} and ID {group['groupId']} created")
    if group.get("users"):
        typer.echo(f"{', '.join(u['username'] for u in group['users'])} was added to the group")


@app.command("delete")
def delete(
    ctx: typer.Context,
    group_name: Annotated[str, typer.Argument(help="Name of the group.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a user group, its memberships and its role assignments."""
    if not yes and not typer.confirm(f"Delete user group {group_name!r} and its role assignments?"):
        typer.echo("Skipping group deletion.")
        return
    client = open_session(ctx).client
    gid = group_id(client, group_name)
    client.delete(f"/api/v1/groups/{gid}")
    typer.echo(f"user group with name {group_name} and ID {gid} deleted")


@app.command("list")
def list_groups(
    ctx: typer.Context,
    groups_user_belongs_to: Annotated[
        str | None, typer.Option("--groups-user-belongs-to", help="Only this user's groups.")
    ] = None,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    limit: Annotated[int, typer.Option(min=0, help="Groups per page (0: all).")] = 0,
    pages: PagesOption = None,
    as_json: JsonOption = False,
) -> None:
    """List user groups."""
    client = open_session(ctx).client
    body: dict[str, Any] = {}
    if groups_user_belongs_to:
        body["userId"] = user_ids(client, [groups_user_belongs_to])[0]
    # Without --pages: one request, as before (--limit alone is one page).
    groups, last = fetch_post_pages(
        client,
        "/api/v1/groups/search",
        "groups",
        body,
        limit=limit,
        offset=offset,
        pages=pages or Pages.one,
    )
    data = {**last, "groups": groups}
    if as_json:
        print_json(data)
        return
    rows = [
        (g["group"]["groupId"], g["group"]["name"], g.get("numMembers", 0))
        for g in data.get("groups") or []
    ]
    print_table(["Group ID", "Name", "Members"], rows)


app.command("ls", hidden=True)(list_groups)


@app.command("describe")
def describe(
    ctx: typer.Context,
    group_name: Annotated[str, typer.Argument(help="Name of the group.")],
    as_json: JsonOption = False,
) -> None:
    """Show a group and its members."""
    client = open_session(ctx).client
    group = client.get(f"/api/v1/groups/{group_id(client, group_name)}")["group"]
    if as_json:
        print_json(group)
        return
    typer.echo(f"group ID {group['groupId']} group name {group['name']} with users added")
    print_table(
        ["ID", "Username", "Display name", "Admin", "Active"],
        [
            (u.get("id"), u.get("username"), u.get("displayName") or "", u.get("admin"),
             u.get("active"))
            for u in group.get("users") or []
        ],
    )  # fmt: skip


def _members(ctx: typer.Context, group_name: str, usernames: str, field: str, verb: str) -> None:
    client = open_session(ctx).client
    names = _split(usernames)
    gid = group_id(client, group_name)
    ids = user_ids(client, names)
    group = client.call("PUT", f"/api/v1/groups/{gid}", json_body={"groupId": gid, field: ids})
    typer.echo(f"user group with ID {group['group']['groupId']} name {group['group']['name']}")
    for uid, name in zip(ids, names, strict=True):
        typer.echo(f"user {verb} with username {name} and ID {uid}")


@app.command("add-user")
def add_user(
    ctx: typer.Context,
    group_name: Annotated[str, typer.Argument(help="Name of the group.")],
    usernames: Annotated[str, typer.Argument(help="Comma-separated usernames.")],
) -> None:
    """Add users to a group."""
    _members(ctx, group_name, usernames, "addUsers", "added to group")


@app.command("remove-user")
def remove_user(
    ctx: typer.Context,
    group_name: Annotated[str, typer.Argument(help="Name of the group.")],
    usernames: Annotated[str, typer.Argument(help="Comma-separated usernames.")],
) -> None:
    """Remove users from a group."""
    _members(ctx, group_name, usernames, "removeUsers", "removed from the group")


@app.command("change-name")
def change_name(
    ctx: typer.Context,
    old_group_name: Annotated[str, typer.Argument(help="The group's name now.")],
    new_group_name: Annotated[str, typer.Argument(help="Its new name.")],
) -> None:
    """Rename a group."""
    client = open_session(ctx).client
    gid = group_id(client, old_group_name)
    group = client.call(
        "PUT", f"/api/v1/groups/{gid}", json_body={"groupId": gid, "name": new_group_name}
    )["group"]
    typer.echo(f"user group with ID {gid} name changed from {old_group_name} to {group['name']}")
