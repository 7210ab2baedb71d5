"""`det token` (alias `tkn`): access tokens for automation, with Determined's commands and flags.

An access token outlives logouts; `det token login TOKEN` stores one as the active user's
token, so that scripts and CI need no password."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
import yaml

from cli.client import path_quote
from cli.errors import CliError
from cli.options import JsonOption
from cli.render import print_table
from cli.session import global_options, open_client, open_session, resolve_master, token_store

app = typer.Typer(no_args_is_help=True)

YamlOption = Annotated[bool, typer.Option("--yaml", help="Print YAML.")]
HEADERS = ["ID", "User ID", "Description", "Created At", "Expires At", "Revoked", "Token Type"]


def _rows(infos: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            t.get("id"),
            t.get("userId"),
            t.get("description") or "",
            t.get("createdAt") or "",
            t.get("expiry") or "",
            t.get("revoked", False),
            t.get("tokenType", ""),
        )
        for t in infos
    ]


def _show(data: Any, as_json: bool, as_yaml: bool) -> bool:
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    elif as_yaml:
        typer.echo(yaml.safe_dump(data, default_flow_style=False).rstrip())
    return as_json or as_yaml


@app.command("describe")
def describe(
    ctx: typer.Context,
    token_id: Annotated[list[int], typer.Argument(help="One or more token ids.")],
    as_json: JsonOption = False,
    as_yaml: YamlOption = False,
) -> None:
    """Describe access tokens."""
    client = open_session(ctx).client
    data = client.get("/api/v1/tokens", {"tokenIds": token_id, "showInactive": "true"})
    infos = data.get("tokenInfo") or []
    if not infos:
        raise CliError(f"no access token with id {', '.join(map(str, token_id))}")
    if not _show(infos, as_json, as_yaml):
        print_table(HEADERS, _rows(infos))


@app.command("list")
def list_tokens(
    ctx: typer.Context,
    username: Annotated[str | None, typer.Argument(help="Only this user's tokens.")] = None,
    show_inactive: Annotated[
        bool, typer.Option("--show-inactive", help="Include revoked and expired tokens.")
    ] = False,
    as_json: JsonOption = False,
    as_yaml: YamlOption = False,
) -> None:
    """List the access tokens you may see (an admin: everyone's)."""
    client = open_session(ctx).client
    params: dict[str, Any] = {"showInactive": str(show_inactive).lower()}
    if username:
        params["username"] = username
    infos = client.get("/api/v1/tokens", params).get("tokenInfo") or []
    if not _show(infos, as_json, as_yaml):
        print_table(HEADERS, _rows(infos))


app.command("ls", hidden=True)(list_tokens)


@app.command("revoke")
def revoke(
    ctx: typer.Context, token_id: Annotated[int, typer.Argument(help="The token's id.")]
) -> None:
    """Revoke an access token: it stops working at once."""
    client = open_session(ctx).client
    client.patch(f"/api/v1/tokens/{token_id}", {"tokenId": token_id, "setRevoked": True})
    typer.echo(f"Successfully updated token with ID: {token_id}.")


@app.command("create")
def create(
    ctx: typer.Context,
    username: Annotated[str | None, typer.Argument(help="For this user (default: you).")] = None,
    expiration_days: Annotated[
        int | None,
        typer.Option("--expiration-days", "-e", help="Days it lives; -1: it never expires."),
    ] = None,
    description: Annotated[
        str | None, typer.Option("--description", "-d", help="What the token is for.")
    ] = None,
    as_json: JsonOption = False,
    as_yaml: YamlOption = False,
) -> None:
    """Create an access token."""
    session = open_session(ctx)
    name = username or session.username
    user = session.client.get(f"/api/v1/users/{path_quote(name)}/by-username")["user"]
    body: dict[str, Any] = {"userId": user["id"]}
    if expiration_days is not None:
        if expiration_days < -1 or expiration_days == 0:
            raise CliError("--expiration-days must be a positive number of days, or -1")
        body["lifespan"] = "-1" if expiration_days == -1 else f"{24 * expiration_days}h"
    if description is not None:
        body["description"] = description
    made = session.client.post("/api/v1/tokens", body)
    if not _show(made, as_json, as_yaml):
        typer.echo(f"TokenID: {made['tokenId']}\nAccess-Token: {made['token']}")


@app.command("edit")
def edit(
    ctx: typer.Context,
    token_id: Annotated[int, typer.Argument(help="The token's id.")],
    description: Annotated[
        str | None, typer.Option("--description", "-d", help="The new description.")
    ] = None,
) -> None:
    """Change an access token's description."""
    client = open_session(ctx).client
    body: dict[str, Any] = {"tokenId": token_id, "setRevoked": False}
    if description is not None:
        body["description"] = description
    data = client.patch(f"/api/v1/tokens/{token_id}", body)
    typer.echo(json.dumps(data, indent=2))
    typer.echo(f"Successfully updated token with ID: {token_id}.")


@app.command("login")
def login(
    ctx: typer.Context, token: Annotated[str, typer.Argument(help="An access token.")]
) -> None:
    """Use an access token as your login on this master from now on."""
    client = open_client(ctx)
    client.token = token
    username = client.get("/api/v1/me")["user"]["username"]
    master = resolve_master(global_options(ctx).master)
    store = token_store()
    store.set_token(master, username, token)
    store.set_active_user(master, username)
    typer.echo(f"Authenticated as {username}.")
