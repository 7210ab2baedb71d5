"""`det master cluster-message set|get|clear`: the banner every user sees (admins only)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from cli.errors import CliError
from cli.options import JsonOption
from cli.render import print_json, print_yaml
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)
PATH = "/api/v1/master/cluster_message"


def _rfc3339(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise CliError(f"{what} time must be RFC-3339, i.e. of the form YYYY-MM-DDThh:mm:ssZ")
    return value


@app.command("set")
def set_message(
    ctx: typer.Context,
    message: Annotated[str | None, typer.Option("--message", "-m", help="The text.")] = None,
    start: Annotated[
        str | None, typer.Option("--start", "-s", help="RFC 3339 start (default: now).")
    ] = None,
    end: Annotated[str | None, typer.Option("--end", "-e", help="RFC 3339 end.")] = None,
    duration: Annotated[
        str | None, typer.Option("--duration", "-d", help="How long, e.g. 2h (not with --end).")
    ] = None,
) -> None:
    """Create or replace the cluster-wide message."""
    if message is None:
        raise CliError("Provide a message using the -m flag.")
    if end is not None and duration is not None:
        raise CliError("--end and --duration are mutually exclusive")
    body: dict[str, Any] = {
        "message": message,
        "startTime": _rfc3339(start, "Start") or datetime.now(UTC).isoformat(),
    }
    if end is not None:
        body["endTime"] = _rfc3339(end, "End")
    if duration is not None:
        body["duration"] = duration
    open_session(ctx).client.call("PUT", PATH, json_body=body)


@app.command("clear")
def clear(
    ctx: typer.Context,
    clear_flag: Annotated[
        bool, typer.Option("--clear", "-c", help="Accepted for Determined's CLI; no effect.")
    ] = False,
) -> None:
    """Clear the cluster-wide message."""
    open_session(ctx).client.delete(PATH)


@app.command("get")
def get(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the cluster-wide message (scheduled or showing)."""
    data = open_session(ctx).client.get(PATH)
    data = {k: v for k, v in data.items() if v is not None}
    if as_json:
        print_json(data)
    else:
        print_yaml(data)
