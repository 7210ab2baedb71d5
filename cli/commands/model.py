"""`det model`: the model registry (models, and versions registered from checkpoints)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from cli.client import ApiClient, path_quote
from cli.commands.workspace import WorkspaceOption, workspace_by_name
from cli.errors import CliError
from cli.options import JsonOption
from cli.render import echo, print_json, print_table
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(help="Name of the model.")]
SORTS = ("name", "description", "creation_time", "last_updated_time")


def model_path(name: str) -> str:
    return f"/api/v1/models/{path_quote(name)}"


def get_model(client: ApiClient, name: str) -> dict[str, Any]:
    return client.get(model_path(name))["model"]


def render_model(model: dict[str, Any]) -> None:
    print_table(
        [
            "ID",
            "Name",
            "Description",
            "Workspace ID",
            "Creation Time",
            "Last Updated Time",
            "Metadata",
        ],
        [
            [
                model.get("id"),
                model.get("name"),
                model.get("description") or "",
                model.get("workspaceId"),
                model.get("creationTime"),
                model.get("lastUpdatedTime"),
                json.dumps(model.get("metadata") or {}, indent=4),
            ]
        ],
    )


def render_versions(versions: list[dict[str, Any]]) -> None:
    rows = []
    for v in versions:
        ckpt = v.get("checkpoint") or {}
        training = ckpt.get("training") or {}
        metadata = ckpt.get("metadata") or {}
        rows.append(
            [
                v.get("version"),
                training.get("trialId"),
                metadata.get("steps_completed"),
                ckpt.get("uuid"),
                json.dumps(training.get("validationMetrics") or {}, indent=2),
                json.dumps(metadata, indent=2),
            ]
        )
    print_table(
        ["Version #", "Trial ID", "Batch #", "Checkpoint UUID", "Validation Metrics", "Metadata"],
        rows,
    )


@app.command("list")
def list_models(
    ctx: typer.Context,
    workspace_names: Annotated[
        str | None,
        typer.Option("-w", "--workspace-names", help="Comma-separated workspaces to list from."),
    ] = None,
    sort_by: Annotated[
        str, typer.Option("--sort-by", help=f"One of {', '.join(SORTS)}.")
    ] = "last_updated_time",
    order_by: Annotated[str, typer.Option("--order-by", help="asc or desc.")] = "asc",
    as_json: JsonOption = False,
) -> None:
    """List the models in the registry."""
    if sort_by not in SORTS or order_by not in ("asc", "desc"):
        raise CliError(f"--sort-by is one of {', '.join(SORTS)}; --order-by is asc or desc")
    params: dict[str, Any] = {
        "sortBy": f"SORT_BY_{sort_by.upper()}",
        "orderBy": f"ORDER_BY_{order_by.upper()}",
    }
    if workspace_names:
        params["workspaceNames"] = workspace_names.split(",")
    models = open_session(ctx).client.paginate("/api/v1/models", "models", params)
    if as_json:
        print_json(models)
        return
    print_table(
        ["ID", "Name", "Workspace ID", "Creation Time", "Last Updated Time", "Metadata"],
        [
            [
                m.get("id"),
                m.get("name"),
                m.get("workspaceId"),
                m.get("creationTime"),
                m.get("lastUpdatedTime"),
                json.dumps(m.get("metadata") or {}, indent=2),
            ]
            for m in models
        ],
    )


app.command("ls", hidden=True)(list_models)


@app.command("create")
def create(
    ctx: typer.Context,
    name: NameArg,
    workspace_name: WorkspaceOption = None,
    description: Annotated[str | None, typer.Option("--description", help="Description.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a model."""
    body = {"name": name, "description": description, "workspaceName": workspace_name}
    model = open_session(ctx).client.post("/api/v1/models", body)["model"]
    if as_json:
        print_json(model)
    else:
        render_model(model)


@app.command("describe")
def describe(
    ctx: typer.Context,
    name: NameArg,
    version: Annotated[
        int, typer.Option("--version", help="Version to show; -1: the latest.")
    ] = -1,
    as_json: JsonOption = False,
) -> None:
    """Show a model and one of its versions (the latest by default)."""
    client = open_session(ctx).client
    model = get_model(client, name)
    if as_json:
        print_json(model)
        return
    base = model_path(model["name"])
    if version == -1:
        params = {"limit": 1, "orderBy": "ORDER_BY_DESC", "sortBy": "SORT_BY_VERSION"}
        versions = client.get(f"{base}/versions", params).get("modelVersions") or []
    else:
        versions = [client.get(f"{base}/versions/{version}")["modelVersion"]]
    render_model(model)
    if versions:
        echo("\n")
        render_versions(versions)


@app.command("register-version")
def register_version(
    ctx: typer.Context,
    name: NameArg,
    uuid: Annotated[str, typer.Argument(help="Checkpoint to register as the next version.")],
    as_json: JsonOption = False,
) -> None:
    """Register a checkpoint as the model's next version."""
    client = open_session(ctx).client
    model = get_model(client, name)
    body = {"checkpointUuid": uuid, "modelName": model["name"]}
    reply = client.post(f"{model_path(model['name'])}/versions", body)
    if as_json:
        print_json(reply)
        return
    render_model(model)
    echo("\n")
    render_versions([reply["modelVersion"]])


@app.command("list-versions")
def list_versions(ctx: typer.Context, name: NameArg, as_json: JsonOption = False) -> None:
    """List a model's versions, newest first."""
    client = open_session(ctx).client
    model = get_model(client, name)
    path = f"{model_path(model['name'])}/versions"
    if as_json:
        print_json(client.get(path))
        return
    params = {"orderBy": "ORDER_BY_DESC", "sortBy": "SORT_BY_VERSION"}
    render_model(model)
    echo("\n")
    render_versions(client.paginate(path, "modelVersions", params))


@app.command("update")
def update(
    ctx: typer.Context,
    name: NameArg,
    new_name: Annotated[str | None, typer.Option("--name", help="New name.")] = None,
    description: Annotated[str | None, typer.Option("--description", help="Description.")] = None,
    notes: Annotated[str | None, typer.Option("--notes", help="Notes (Markdown).")] = None,
    labels: Annotated[
        list[str] | None, typer.Option("--label", help="A label (repeat; replaces them all).")
    ] = None,
    metadata: Annotated[
        str | None, typer.Option("--metadata", help="Metadata as a JSON object (replaces it).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Change a model's name, description, notes, labels or metadata."""
    body: dict[str, Any] = {}
    for key, value in (("name", new_name), ("description", description), ("notes", notes)):
        if value is not None:
            body[key] = value
    if labels is not None:
        body["labels"] = labels
    if metadata is not None:
        try:
            body["metadata"] = json.loads(metadata)
        except ValueError as exc:
            raise CliError(f"--metadata is not JSON: {exc}") from None
        if not isinstance(body["metadata"], dict):
            raise CliError("--metadata must be a JSON object")
    if not body:
        raise CliError(
            "nothing to update: give --name, --description, --notes, --label or --metadata"
        )
    model = open_session(ctx).client.patch(model_path(name), body)["model"]
    if as_json:
        print_json(model)
    else:
        render_model(model)


@app.command("archive")
def archive(ctx: typer.Context, name: NameArg) -> None:
    """Archive a model (hidden from default lists; takes no new versions)."""
    open_session(ctx).client.post(f"{model_path(name)}/archive")
    echo(f"Archived model {name}")


@app.command("unarchive")
def unarchive(ctx: typer.Context, name: NameArg) -> None:
    """Unarchive a model."""
    open_session(ctx).client.post(f"{model_path(name)}/unarchive")
    echo(f"Unarchived model {name}")


@app.command("delete")
def delete(ctx: typer.Context, name: NameArg) -> None:
    """Delete a model and its versions (their checkpoints become collectable again)."""
    client = open_session(ctx).client
    client.delete(model_path(get_model(client, name)["name"]))
    echo(f"Deleted model {name}")


@app.command("move")
def move(ctx: typer.Context, name: NameArg, workspace_name: WorkspaceOption = None) -> None:
    """Move a model to another workspace."""
    if not workspace_name:
        raise CliError("give the destination workspace with -w/--workspace-name")
    client = open_session(ctx).client
    ws = workspace_by_name(client, workspace_name)
    body = {"destinationWorkspaceId": ws["id"], "modelName": name}
    client.post(f"{model_path(name)}/move", body)
    echo(f"Moved model {name} to workspace {workspace_name}")
