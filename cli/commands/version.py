"""`det version`: client version plus the master's unauthenticated GET /info."""

from __future__ import annotations

import typer

from cli import __version__
from cli.errors import CliError
from cli.options import JsonOption
from cli.render import echo, print_json, print_yaml
from cli.session import open_client

WIRE_VERSION = "0.38.1"


def show_version(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the client and master versions (GET /info)."""
    client = open_client(ctx)
    try:
        info = client.get("/info")
    except CliError:
        echo(f"client version: {__version__}")
        raise
    report = {
        "client": {"version": __version__, "wire_compatible_with": WIRE_VERSION},
        "master": info,
        "master_address": client.master_url,
    }
    if as_json:
        print_json(report)
    else:
        print_yaml(report)
