"""`det template`: named config fragments merged into experiment configs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.client import path_quote
from cli.commands.workspace import workspace_by_name
from cli.errors import NotFound
from cli.options import JsonOption
from cli.render import echo, print_json, print_table, print_yaml, to_yaml
from cli.session import open_session
from cli.yaml_config import load_mapping

app = typer.Typer(no_args_is_help=True)
set_value_app = typer.Typer(no_args_is_help=True, help="Set template attributes.")
app.add_typer(set_value_app, name="set-value")

NameArg = Annotated[str, typer.Argument(help="Template name.")]
FileArg = Annotated[Path, typer.Argument(help="Template body (YAML).")]


def _path(name: str) -> str:
    return f"/api/v1/templates/{path_quote(name)}"


@app.command("set")
def set_template(
    ctx: typer.Context,
    name: NameArg,
    config_file: Annotated[Path, typer.Argument(help="Template body (YAML).")],
) -> None:
    """Create or replace a template from a YAML file."""
    _, config = load_mapping(config_file, "template file")
    client = open_session(ctx).client
    try:
        client.get(_path(name))
        exists = True
    except NotFound:
        exists = False
    if exists:
        client.patch(_path(name), config)
    else:
        client.post(_path(name), {"name": name, "config": config, "workspaceId": 0})
    echo(f"Set template {name}")


@app.command("create")
def create(
    ctx: typer.Context,
    name: NameArg,
    config_file: FileArg,
    workspace_name: Annotated[
        str | None,
        typer.Option(
            "--workspace-name", "-w", help="The workspace it belongs to.", show_default=False
        ),
    ] = None,
) -> None:
    """Create a template (refused if one of that name exists), in a workspace if given."""
    _, config = load_mapping(config_file, "template file")
    client = open_session(ctx).client
    workspace_id = workspace_by_name(client, workspace_name)["id"] if workspace_name else 0
    client.post(_path(name), {"name": name, "config": config, "workspaceId": workspace_id})
    echo(f"Created template {name}")


@set_value_app.command("config")
def set_config(ctx: typer.Context, name: NameArg, config_file: FileArg) -> None:
    """Replace an existing template's config."""
    _, config = load_mapping(config_file, "template file")
    open_session(ctx).client.patch(_path(name), config)
    echo(f"Updated template {name}")


@app.command("list")
def list_templates(
    ctx: typer.Context,
    details: Annotated[bool, typer.Option("--details", "-d", help="Show each config.")] = False,
    as_json: JsonOption = False,
) -> None:
    """List templates (GET /api/v1/templates)."""
    templates = open_session(ctx).client.paginate("/api/v1/templates", "templates")
    if as_json:
        print_json({"templates": templates})
        return
    if details:
        rows = [(t.get("name"), t.get("workspaceId"), to_yaml(t.get("config"))) for t in templates]
        print_table(["Name", "Workspace ID", "Config"], rows)
    else:
        print_table(
            ["Name", "Workspace ID"], [(t.get("name"), t.get("workspaceId")) for t in templates]
        )


@app.command("describe")
def describe(ctx: typer.Context, name: NameArg, as_json: JsonOption = False) -> None:
    """Print a template's config as YAML."""
    reply = open_session(ctx).client.get(_path(name))
    if as_json:
        print_json(reply)
        return
    print_yaml((reply.get("template") or {}).get("config") or {})


@app.command("remove")
def remove(ctx: typer.Context, name: NameArg) -> None:
    """Delete a template."""
    open_session(ctx).client.delete(_path(name))
    echo(f"Removed template {name}")
