"""`det master`: cluster information and the master's configuration."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.commands import cluster_message
from cli.errors import CliError
from cli.options import JsonOption
from cli.render import format_time, print_json, print_record, print_table, print_yaml
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)
app.add_typer(
    cluster_message.app, name="cluster-message", help="Set, show or clear the cluster-wide message."
)


@app.command("info")
def info(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show cluster information (GET /api/v1/master)."""
    data = open_session(ctx).client.get("/api/v1/master")
    if as_json:
        print_json(data)
        return
    print_record([(key, value) for key, value in data.items()])


config_app = typer.Typer()
app.add_typer(
    config_app, name="config", help="Show the master's configuration, or set its log level."
)
LEVELS = ["TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"]


def _show_config(ctx: typer.Context, as_json: bool) -> None:
    data = open_session(ctx).client.get("/api/v1/master/config")
    if as_json:
        print_json(data)
        return
    print_yaml(data.get("config", data))


@config_app.callback(invoke_without_command=True)
def config(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the master's effective configuration as YAML (GET /api/v1/master/config)."""
    if ctx.invoked_subcommand is None:
        _show_config(ctx, as_json)


@config_app.command("show")
def config_show(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the master's effective configuration as YAML."""
    _show_config(ctx, as_json)


@config_app.command("set")
def config_set(
    ctx: typer.Context,
    log_level: Annotated[
        str | None, typer.Option("--log.level", help=f"One of {', '.join(LEVELS)}.")
    ] = None,
    log_color: Annotated[str | None, typer.Option("--log.color", help="on or off.")] = None,
) -> None:
    """Change the master's log level until it restarts (admins)."""
    paths, log = [], {}
    if log_level is not None:
        if log_level.upper() not in LEVELS:
            raise CliError(f"--log.level must be one of {', '.join(LEVELS)}")
        paths.append("log.level")
        log["level"] = f"LOG_LEVEL_{log_level.upper()}"
    if log_color is not None:
        if log_color not in ("on", "off"):
            raise CliError("--log.color must be on or off")
        paths.append("log.color")
        log["color"] = log_color == "on"
    if not paths:
        raise CliError("give --log.level or --log.color")
    body = {"config": {"log": log}, "fieldMask": {"paths": paths}}
    open_session(ctx).client.patch("/api/v1/master/config", body)


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


@app.command("logs")
def logs(
    ctx: typer.Context,
    follow: Annotated[
        bool, typer.Option("-f", "--follow", help="Keep printing new lines.")
    ] = False,
    tail: Annotated[
        int | None, typer.Option("--tail", min=1, help="Only the last N lines.")
    ] = None,
) -> None:
    """The master's own log (admins; the newest 10,000 lines it kept in memory)."""
    params = {"follow": str(follow).lower()}
    if tail:
        params["offset"] = str(-tail)
    for item in open_session(ctx).client.stream("/api/v1/master/logs", params):
        entry = item.get("logEntry") or {}
        typer.echo(f"{entry.get('timestamp')} [{entry.get('level', '')}]: {entry.get('message')}")
