"""`det master`: cluster information and the master's configuration."""

from __future__ import annotations

import typer

from cli.options import JsonOption
from cli.render import print_json, print_record, print_yaml
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
