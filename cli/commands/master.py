"""`det master`: cluster information and the master's configuration."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import JsonOption
from cli.render import format_time, print_json, print_record, print_table, print_yaml
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)


@app.command("info")
def info(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show cluster information (GET /api/v1/master)."""
    data = open_session(ctx).client.get("/api/v1/master")
    if as_json:
        print_json(data)
        return
    print_record([(key, value) for key, value in data.items()])


@app.command("config")
def config(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the master's effective configuration as YAML (GET /api/v1/master/config)."""
    data = open_session(ctx).client.get("/api/v1/master/config")
    if as_json:
        print_json(data)
        return
    print_yaml(data.get("config", data))


@app.command("audit")
def audit(
    ctx: typer.Context,
    actor: Annotated[str | None, typer.Option(help="Only this user's actions.")] = None,
    action: Annotated[
        str | None, typer.Option(help='A method, a route, or both: "POST /api/v1/users".')
    ] = None,
    since: Annotated[str | None, typer.Option(help="RFC 3339, e.g. 2026-11-29T00:00:00Z.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 100,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    as_json: JsonOption = False,
) -> None:
    """The audit log, newest first (admins only; GET /api/v1/master/audit)."""
    params = {"actor": actor, "action": action, "since": since, "limit": limit, "offset": offset}
    data = open_session(ctx).client.get(
        "/api/v1/master/audit", {k: v for k, v in params.items() if v is not None}
    )
    if as_json:
        print_json(data)
        return
    print_table(
        ["Time", "Actor", "Action", "Path", "Outcome", "Status", "Address"],
        [
            (format_time(e["time"]), e["actor"], e["action"], e["path"], e["outcome"],
             e["status"], e.get("clientAddress") or "")
            for e in data.get("entries") or []
        ],
    )  # fmt: skip
