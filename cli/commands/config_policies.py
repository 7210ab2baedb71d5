"""`det config-policies` (alias `cp`): what every experiment's or task's config must hold,
globally or in one workspace (Determined's commands and arguments; setting needs an admin)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from cli.client import ApiClient
from cli.commands.workspace import workspace_by_name
from cli.errors import CliError
from cli.options import JsonOption
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)


class WorkloadType(StrEnum):
    experiment = "experiment"
    tasks = "tasks"


Workload = Annotated[
    WorkloadType, typer.Argument(help="experiment, or tasks (notebooks, shells, commands, …).")
]
WorkspaceName = Annotated[
    str | None,
    typer.Option("--workspace-name", "-w", help="This workspace's policies (default: global)."),
]
YamlOption = Annotated[bool, typer.Option("--yaml", help="Print YAML (the default).")]


def _path(client: ApiClient, workload: WorkloadType, workspace: str | None) -> str:
    kind = "NTSC" if workload is WorkloadType.tasks else "EXPERIMENT"
    if workspace:
        ws = workspace_by_name(client, workspace)
        return f"/api/v1/config-policies/workspaces/{ws['id']}/{kind}"
    return f"/api/v1/config-policies/global/{kind}"


def _print(policies: Any, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(policies, indent=2))
    else:
        typer.echo(yaml.safe_dump(policies, default_flow_style=False).rstrip())


@app.command("describe")
def describe(
    ctx: typer.Context,
    workload_type: Workload,
    workspace_name: WorkspaceName = None,
    as_json: JsonOption = False,
    as_yaml: YamlOption = False,
) -> None:
    """Show the config policies."""
    client = open_session(ctx).client
    data = client.get(_path(client, workload_type, workspace_name))
    _print(data.get("configPolicies"), as_json)


@app.command("set")
def set_policies(
    ctx: typer.Context,
    workload_type: Workload,
    config_file: Annotated[Path, typer.Argument(help="YAML or JSON file with the policies.")],
    workspace_name: WorkspaceName = None,
) -> None:
    """Set the config policies (admins)."""
    try:
        text = config_file.read_text()
    except OSError as exc:
        raise CliError(f"Error opening file: {exc}") from None
    client = open_session(ctx).client
    data = client.call(
        "PUT", _path(client, workload_type, workspace_name), json_body={"configPolicies": text}
    )
    where = f"workspace {workspace_name}" if workspace_name else "global"
    typer.echo(f"Set {where} {workload_type.value} config policies:")
    _print(data.get("configPolicies"), False)


@app.command("delete")
def delete(
    ctx: typer.Context, workload_type: Workload, workspace_name: WorkspaceName = None
) -> None:
    """Delete the config policies (admins)."""
    client = open_session(ctx).client
    client.delete(_path(client, workload_type, workspace_name))
    where = f"workspace {workspace_name}" if workspace_name else "global"
    typer.echo(f"Successfully deleted {where} {workload_type.value} config policies")
