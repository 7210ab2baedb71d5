"""`det user`: log in and out, and manage user accounts."""

from __future__ import annotations

import contextlib
import os
from typing import Annotated, Any

import typer

from cli import auth
from cli.client import ApiClient
from cli.commands.user_edit import edit, rename
from cli.errors import CliError, NotFound, Unauthenticated
from cli.options import JsonOption
from cli.render import echo, print_json, print_table, print_warning
from cli.session import (
    global_options,
    open_client,
    open_session,
    prompt_password,
    read_secret,
    token_store,
)

app = typer.Typer(no_args_is_help=True)
app.command("edit")(edit)
app.command("rename")(rename)

UsernameArg = Annotated[str, typer.Argument(help="The user's name.")]
OptionalUsernameArg = Annotated[
    str | None, typer.Argument(help="The user's name.", show_default=False)
]


@app.command("login")
def login(ctx: typer.Context, username: OptionalUsernameArg = None) -> None:
    """Log in, cache the token and make USERNAME the active user."""
    client = open_client(ctx)
    username = username or global_options(ctx).user or typer.prompt("Username")
    if os.environ.get("DET_USER") == username and os.environ.get("DET_PASS") is not None:
        password = os.environ["DET_PASS"]
    else:
        password = prompt_password(username)
    creds = auth.login(client, username, password)
    store = token_store()
    store.set_token(client.master_url, creds.username, creds.token)
    store.set_active_user(client.master_url, creds.username)
    echo(f"Logged in as user '{creds.username}'")


@app.command("logout")
def logout(
    ctx: typer.Context,
    every: Annotated[
        bool, typer.Option("-a", "--all", help="Every user logged in to this master.")
    ] = False,
) -> None:
    """End the active user's session on the master and forget its token."""
    client = open_client(ctx)
    store = token_store()
    if every:
        for name in store.cached_users(client.master_url):
            _logout_one(client, store, name)
        return
    user = global_options(ctx).user or store.get_active_user(client.master_url)
    if not user:
        echo("Not logged in")
        return
    _logout_one(client, store, user)


def _logout_one(client: ApiClient, store: auth.TokenStore, user: str) -> None:
    token = store.get_token(client.master_url, user)
    if token:
        client.token = token
        # An expired token needs no logout; forgetting it is all that is left.
        with contextlib.suppress(Unauthenticated):
            client.post("/api/v1/auth/logout")
    store.drop_user(client.master_url, user)
    echo(f"Logged out user '{user}'")


@app.command("whoami")
def whoami(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the user this client acts as (GET /api/v1/me)."""
    session = open_session(ctx)
    data = session.client.get("/api/v1/me")
    if as_json:
        print_json(data)
        return
    name = (data.get("user") or {}).get("username") or session.username
    echo(f"You are logged in as user '{name}'")


@app.command("create")
def create(
    ctx: typer.Context,
    username: UsernameArg,
    admin: Annotated[bool, typer.Option("--admin", help="Give the user admin rights.")] = False,
    password: Annotated[
        str | None,
        typer.Option("--password", help="Initial password (default: empty).", show_default=False),
    ] = None,
    remote: Annotated[
        bool, typer.Option("--remote", help="An SSO-only user (needs SSO on the master).")
    ] = False,
) -> None:
    """Create a user (POST /api/v1/users)."""
    session = open_session(ctx)
    user: dict[str, Any] = {"username": username, "admin": admin, "active": True}
    if remote:
        user["remote"] = True
    body = {
        "user": user,
        "password": auth.hash_password(password or ""),
        "isHashed": True,
    }
    session.client.post("/api/v1/users", body)
    echo(f"Created user '{username}'")


def _list_users(client: ApiClient) -> list[dict[str, Any]]:
    return client.paginate("/api/v1/users", "users")


@app.command("list")
def list_users(
    ctx: typer.Context,
    show_all: Annotated[
        bool, typer.Option("-a", "--all", help="Include deactivated users.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """List active users (--all: deactivated ones too) (GET /api/v1/users)."""
    users = _list_users(open_session(ctx).client)
    if not show_all:
        users = [u for u in users if u.get("active", True)]
    if as_json:
        print_json({"users": users})
        return
    rows = [
        (u.get("id"), u.get("username"), u.get("displayName"), u.get("admin"), u.get("active"))
        for u in users
    ]
    print_table(["ID", "Username", "Display Name", "Admin", "Active"], rows)


def find_user_id(client: ApiClient, username: str) -> Any:
    for user in _list_users(client):
        if user.get("username") == username:
            return user.get("id")
    raise NotFound(404, f"user '{username}' not found")


def _prompt_new_password(username: str) -> str:
    first = read_secret(f"New password for user '{username}'")
    second = read_secret("Confirm password")
    if first != second:
        raise CliError("the passwords do not match")
    return first


@app.command("change-password")
def change_password(ctx: typer.Context, username: OptionalUsernameArg = None) -> None:
    """Change a user's password (yours when USERNAME is left out)."""
    session = open_session(ctx)
    target = username or session.username
    new_password = _prompt_new_password(target)
    if target == session.username:
        user_id = (session.client.get("/api/v1/me").get("user") or {}).get("id")
        if user_id is None:
            user_id = find_user_id(session.client, target)
    else:
        user_id = find_user_id(session.client, target)
    body = {"password": auth.hash_password(new_password), "isHashed": True}
    session.client.patch(f"/api/v1/users/{user_id}", body)
    echo(f"Changed the password of user '{target}'")
    if target == session.username:
        _relogin(session.client, target, new_password)


def _relogin(client: ApiClient, username: str, password: str) -> None:
    """The master may revoke old tokens on a password change; cache a fresh one."""
    try:
        creds = auth.login(client, username, password)
    except CliError as exc:
        print_warning(f"could not log in again with the new password: {exc.message}")
        return
    token_store().set_token(client.master_url, creds.username, creds.token)


def _set_active(ctx: typer.Context, username: str, active: bool) -> None:
    client = open_session(ctx).client
    user_id = find_user_id(client, username)
    client.patch(f"/api/v1/users/{user_id}", {"active": active})
    echo(f"{'Activated' if active else 'Deactivated'} user '{username}'")


@app.command("activate")
def activate(ctx: typer.Context, username: UsernameArg) -> None:
    """Allow a user to log in again."""
    _set_active(ctx, username, True)


@app.command("deactivate")
def deactivate(ctx: typer.Context, username: UsernameArg) -> None:
    """Stop a user from logging in."""
    _set_active(ctx, username, False)


@app.command("link-with-agent-user")
def link_with_agent_user(
    ctx: typer.Context,
    username: UsernameArg,
    agent_uid: Annotated[
        int | None, typer.Option("--agent-uid", help="UID on the agent to run tasks as.")
    ] = None,
    agent_gid: Annotated[
        int | None, typer.Option("--agent-gid", help="GID on the agent to run tasks as.")
    ] = None,
    agent_user: Annotated[
        str | None, typer.Option("--agent-user", help="User on the agent to run tasks as.")
    ] = None,
    agent_group: Annotated[
        str | None, typer.Option("--agent-group", help="Group on the agent to run tasks as.")
    ] = None,
) -> None:
    """Run USERNAME's tasks as this Unix user and group on the agents (admin only)."""
    given = {
        "agent-uid": agent_uid,
        "agent-gid": agent_gid,
        "agent-user": agent_user,
        "agent-group": agent_group,
    }
    for name, value in given.items():
        if value is None:
            raise CliError(f"{name} argument required")
    client = open_session(ctx).client
    user_id = find_user_id(client, username)
    body = {
        "agentUserGroup": {
            "agentUid": agent_uid,
            "agentGid": agent_gid,
            "agentUser": agent_user,
            "agentGroup": agent_group,
        }
    }
    client.patch(f"/api/v1/users/{user_id}", body)
    echo(
        f"Linked user '{username}' with agent user {agent_user} ({agent_uid}) "
        f"and group {agent_group} ({agent_gid})"
    )
