"""`det user edit` and `det user rename`, as Determined 0.38.1's client has them: one PATCH
/api/v1/users/{id} with the fields given, and its messages."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.client import ApiClient
from cli.errors import CliError, NotFound
from cli.render import echo
from cli.session import open_session

UsernameArg = Annotated[str, typer.Argument(help="The user's name.")]

_TRUE = {"true", "t", "yes", "y", "1", "on"}
_FALSE = {"false", "f", "no", "n", "0", "off"}


def to_bool(value: str | None) -> bool | None:
    """Determined's `(true|false)` option values; None when the option was not given."""
    if value is None:
        return None
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise typer.BadParameter(f"expected true or false, not {value!r}")


def find_user_id(client: ApiClient, username: str) -> int:
    for user in client.paginate("/api/v1/users", "users"):
        if user.get("username") == username:
            return int(user["id"])
    raise NotFound(404, f"user '{username}' not found")


def _flag(name: str, what: str) -> object:
    return typer.Option(name, metavar="(true|false)", help=what, show_default=False)


# (wire field, the name Determined's message gives it), in its order
_FIELDS = (
    ("displayName", "Display Name"),
    ("remote", "Remote"),
    ("active", "Active"),
    ("username", "Username"),
    ("admin", "Admin"),
)


def edit(
    ctx: typer.Context,
    target_user: UsernameArg,
    display_name: Annotated[
        str | None,
        typer.Option("--display-name", help="New display name.", show_default=False),
    ] = None,
    username: Annotated[
        str | None, typer.Option("--username", help="New username.", show_default=False)
    ] = None,
    remote: Annotated[str | None, _flag("--remote", "Set the user as remote (SSO only).")] = None,
    active: Annotated[str | None, _flag("--active", "Set the user active or inactive.")] = None,
    admin: Annotated[str | None, _flag("--admin", "Grant or remove admin rights.")] = None,
) -> None:
    """Edit a user's fields (admin only, but for one's own display name)."""
    values = {
        "displayName": display_name,
        "remote": to_bool(remote),
        "active": to_bool(active),
        "username": username,
        "admin": to_bool(admin),
    }
    body = {key: value for key, value in values.items() if value is not None}
    if not body:
        raise CliError("No field provided. Use 'det user edit -h' for usage.")
    client = open_session(ctx).client
    client.patch(f"/api/v1/users/{find_user_id(client, target_user)}", body)
    changed = ", ".join(label for key, label in _FIELDS if key in body)
    echo(f"Changes made to the following fields: {changed}")


def rename(
    ctx: typer.Context,
    target_user: UsernameArg,
    new_username: Annotated[str, typer.Argument(help="The new username.")],
) -> None:
    """Change a user's username (admin only)."""
    client = open_session(ctx).client
    client.patch(f"/api/v1/users/{find_user_id(client, target_user)}", {"username": new_username})
    echo(f"Renamed user '{target_user}' to '{new_username}'")
