"""`det project`: projects inside workspaces, and moving experiments between them."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from cli.client import ApiClient
from cli.commands.workspace import (
    WorkspaceArg,
    list_projects,
    render_projects,
    wait_deleted,
    workspace_by_name,
)
from cli.errors import NotFound
from cli.options import JsonOption
from cli.pages import Pages, fetch_pages
from cli.render import echo, format_time, print_json, print_table, strip_state
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)

ProjectArg = Annotated[str, typer.Argument(help="Name of the project.")]
AllOption = Annotated[
    bool, typer.Option("--all", "-a", help="Include archived and other users' experiments.")
]


def project_by_name(
    client: ApiClient, workspace_name: str, project_name: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    ws = workspace_by_name(client, workspace_name)
    found = client.get(f"/api/v1/workspaces/{ws['id']}/projects", {"name": project_name})
    projects = found.get("projects") or []
    if not projects:
        raise NotFound(404, f"project '{project_name}' not found")
    return ws, projects[0]


app.command("list")(list_projects)
app.command("ls", hidden=True)(list_projects)


def _experiments(
    client: ApiClient,
    project: dict[str, Any],
    username: str,
    show_all: bool,
    *,
    sort_by: str = "id",
    order_by: str = "asc",
    limit: int = 200,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """As Determined's client: every page of `limit`, or with an `offset` that one page."""
    params: dict[str, Any] = {
        "projectId": project["id"],
        "orderBy": f"ORDER_BY_{order_by.upper()}",
        "sortBy": f"SORT_BY_{sort_by.upper()}",
    }
    if not show_all:
        params.update(users=[username], archived=False)
    pages = Pages.one if offset else Pages.all
    path = "/api/v1/experiments"
    return fetch_pages(client, path, "experiments", params, limit=limit, offset=offset, pages=pages)


def _render_experiments(experiments: list[dict[str, Any]]) -> None:
    rows = [
        (
            e.get("id"),
            e.get("username"),
            e.get("name"),
            e.get("forkedFrom"),
            strip_state(e.get("state")),
            format_time(e.get("startTime")),
            format_time(e.get("endTime")),
            e.get("resourcePool"),
        )
        for e in experiments
    ]
    headers = ["ID", "Owner", "Name", "Parent ID", "State", "Started", "Ended", "Resource Pool"]
    print_table(headers, rows)


class ExperimentSort(StrEnum):
    id = "id"
    name = "name"


class ExperimentOrder(StrEnum):
    asc = "asc"
    desc = "desc"


@app.command("list-experiments")
def list_experiments(
    ctx: typer.Context,
    workspace_name: WorkspaceArg,
    project_name: ProjectArg,
    show_all: AllOption = False,
    sort_by: Annotated[
        ExperimentSort, typer.Option("--sort-by", help="Sort by id or name.")
    ] = ExperimentSort.id,
    order_by: Annotated[
        ExperimentOrder, typer.Option("--order-by", help="asc or desc.")
    ] = ExperimentOrder.asc,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Experiments per page.")] = 200,
    offset: Annotated[
        int, typer.Option("--offset", min=0, help="Skip this many, then read one page.")
    ] = 0,
    as_json: JsonOption = False,
) -> None:
    """List the experiments of a project (yours and unarchived, unless --all)."""
    session = open_session(ctx)
    _, project = project_by_name(session.client, workspace_name, project_name)
    experiments = _experiments(
        session.client,
        project,
        session.username,
        show_all,
        sort_by=sort_by.value,
        order_by=order_by.value,
        limit=limit,
        offset=offset,
    )
    if as_json:
        print_json(experiments)
    else:
        _render_experiments(experiments)


@app.command("create")
def create(
    ctx: typer.Context,
    workspace_name: WorkspaceArg,
    name: ProjectArg,
    description: Annotated[str | None, typer.Option("--description", help="Description.")] = None,
    key: Annotated[str | None, typer.Option("--key", help="Key (1-5 letters or digits).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a project in a workspace."""
    client = open_session(ctx).client
    ws = workspace_by_name(client, workspace_name)
    body = {"name": name, "description": description, "workspaceId": ws["id"], "key": key}
    project = client.post(f"/api/v1/workspaces/{ws['id']}/projects", body)["project"]
    if as_json:
        print_json(project)
    else:
        render_projects([project])


@app.command("describe")
def describe(
    ctx: typer.Context,
    workspace_name: WorkspaceArg,
    project_name: ProjectArg,
    show_all: AllOption = False,
    as_json: JsonOption = False,
) -> None:
    """Show a project and its experiments."""
    session = open_session(ctx)
    _, project = project_by_name(session.client, workspace_name, project_name)
    if as_json:
        print_json(project)
        return
    render_projects([project])
    echo("\nAssociated Experiments")
    _render_experiments(_experiments(session.client, project, session.username, show_all))


@app.command("edit")
def edit(
    ctx: typer.Context,
    workspace_name: WorkspaceArg,
    project_name: ProjectArg,
    new_name: Annotated[
        str | None, typer.Option("--new_name", "--new-name", help="New name.")
    ] = None,
    description: Annotated[str | None, typer.Option("--description", help="Description.")] = None,
    key: Annotated[str | None, typer.Option("--key", help="Key.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Rename a project or change its description or key."""
    client = open_session(ctx).client
    _, project = project_by_name(client, workspace_name, project_name)
    body = {"name": new_name, "description": description, "key": key}
    project = client.patch(f"/api/v1/projects/{project['id']}", body)["project"]
    if as_json:
        print_json(project)
    else:
        render_projects([project])


def _verb(verb: str, done: str):  # type: ignore[no-untyped-def]
    def command(ctx: typer.Context, workspace_name: WorkspaceArg, project_name: ProjectArg) -> None:
        client = open_session(ctx).client
        _, project = project_by_name(client, workspace_name, project_name)
        client.post(f"/api/v1/projects/{project['id']}/{verb}")
        echo(f"Successfully {done} project {project_name}.")

    command.__doc__ = f"{verb.capitalize()} a project."
    return command


app.command("archive")(_verb("archive", "archived"))
app.command("unarchive")(_verb("unarchive", "un-archived"))


@app.command("delete")
def delete(
    ctx: typer.Context,
    workspace_name: WorkspaceArg,
    project_name: ProjectArg,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a project with its (ended) experiments and their checkpoints."""
    client = open_session(ctx).client
    _, project = project_by_name(client, workspace_name, project_name)
    if not yes and not typer.confirm(
        f'Deleting project "{project_name}" will result in the unrecoverable deletion of this '
        "project and all of its experiments (and their checkpoints). For a recoverable "
        "alternative, see 'archive'. Proceed?"
    ):
        echo("Aborting project deletion.")
        return
    path = f"/api/v1/projects/{project['id']}"
    if (client.delete(path) or {}).get("completed", True):
        echo(f"Successfully deleted project {project_name}.")
        return
    echo(f"Started deletion of project {project_name}...")
    wait_deleted(client, path, "project", "numExperiments", "experiment")
    echo("Project deleted successfully.")


def move_experiment_to(ctx: typer.Context, experiment_id: int, ws: str, project: str) -> None:
    client = open_session(ctx).client
    _, dest = project_by_name(client, ws, project)
    body = {"destinationProjectId": dest["id"], "experimentId": experiment_id}
    client.post(f"/api/v1/experiments/{experiment_id}/move", body)
    echo(f'Moved experiment {experiment_id} to project "{project}"')


@app.command("move-experiment")
def move_experiment(
    ctx: typer.Context,
    workspace_name: WorkspaceArg,
    project_name: ProjectArg,
    experiment_id: Annotated[int, typer.Argument(help="Experiment to move.", min=1)],
) -> None:
    """Move an experiment into this project (also: det experiment move ID WS PROJECT)."""
    move_experiment_to(ctx, experiment_id, workspace_name, project_name)


def experiment_move(
    ctx: typer.Context,
    experiment_id: Annotated[int, typer.Argument(help="Experiment to move.", min=1)],
    workspace_name: Annotated[str, typer.Argument(help="Destination workspace.")],
    project_name: Annotated[str, typer.Argument(help="Destination project.")],
) -> None:
    """Move an experiment to another project."""
    move_experiment_to(ctx, experiment_id, workspace_name, project_name)
