"""`det notebook`: JupyterLab on the cluster, reached through the master's proxy."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from cli import interactive
from cli.client import path_quote
from cli.log_filters import (
    AfterOption,
    AgentIdOption,
    AllocationIdOption,
    BeforeOption,
    ContainerIdOption,
    HeadOption,
    LevelOption,
    RankIdOption,
    SourceOption,
    StdtypeOption,
    filter_params,
)
from cli.logs import print_logs, task_logs_path
from cli.options import CsvOption, FollowOption, JsonOption, TailOption
from cli.render import echo
from cli.session import global_options, open_session
from cli.task_lists import (
    ForceOption,
    OrderBy,
    OrderByOption,
    QuietOption,
    SortBy,
    SortByOption,
    WorkspaceNameOption,
    kill_tasks,
    list_tasks,
    workspace_field,
)

app = typer.Typer(no_args_is_help=True)
PLURAL, SINGULAR = "notebooks", "notebook"

ConfigFile = Annotated[Path | None, typer.Option("--config-file", help="Config (YAML).")]
Overrides = Annotated[
    list[str] | None, typer.Option("--config", help="key.path=YAML (repeatable).")
]
Volumes = Annotated[
    list[str] | None, typer.Option("-v", "--volume", help="HOST:CONTAINER bind mount.")
]
Context = Annotated[
    Path | None, typer.Option("-c", "--context", help="Directory copied into the task.")
]
Template = Annotated[str | None, typer.Option("--template", help="Config template to merge.")]


@app.command("start")
def start(
    ctx: typer.Context,
    config_file: ConfigFile = None,
    overrides: Overrides = None,
    volumes: Volumes = None,
    context_dir: Context = None,
    template: Template = None,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Do not open it.")] = False,
    detach: Annotated[bool, typer.Option("-d", "--detach", help="Print the ID; return.")] = False,
    workspace_name: WorkspaceNameOption = None,
) -> None:
    """Start JupyterLab; waits until it answers and prints its address."""
    session = open_session(ctx)
    config = interactive.load_config(config_file, overrides or [], volumes or [])
    extra = workspace_field(session.client, workspace_name)
    task = interactive.launch(
        session.client, PLURAL, SINGULAR, config, context_dir, template, **extra
    )
    if detach:
        echo(task["id"])
        return
    interactive.announce(SINGULAR, task)
    interactive.wait_ready(session.client, task["id"], SINGULAR, global_options(ctx).sleep)
    url = interactive.task_url(session.client.master_url, task, "jupyter-lab")
    if not no_browser:
        webbrowser.open(url)
    echo(f"Jupyter Notebook is running at: {url}")
    echo(f"Connect to remote Jupyter server: {session.client.master_url}{task['serviceAddress']}")


@app.command("open")
def open_(ctx: typer.Context, notebook_id: Annotated[str, typer.Argument()]) -> None:
    """Open a running notebook in the browser."""
    session = open_session(ctx)
    task = session.client.get(f"/api/v1/{PLURAL}/{path_quote(notebook_id)}")[SINGULAR]
    url = interactive.task_url(session.client.master_url, task, "jupyter-lab")
    webbrowser.open(url)
    echo(url)


@app.command("list")
def list_(
    ctx: typer.Context,
    show_all: Annotated[bool, typer.Option("-a", "--all", help="Everyone's.")] = False,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
    quiet: QuietOption = False,
    workspace_name: WorkspaceNameOption = None,
    sort_by: SortByOption = SortBy.startTime,
    order_by: OrderByOption = OrderBy.asc,
) -> None:
    """List your notebooks (--all: everyone's) (alias: ls)."""
    session = open_session(ctx)
    list_tasks(
        session.client,
        PLURAL,
        username=None if show_all else session.username,
        workspace_name=workspace_name,
        sort_by=sort_by,
        order_by=order_by,
        quiet=quiet,
        as_json=as_json,
        as_csv=as_csv,
    )


app.command("ls", hidden=True)(list_)


@app.command("kill")
def kill(
    ctx: typer.Context,
    ids: Annotated[list[str], typer.Argument(help="IDs.")],
    force: ForceOption = False,
) -> None:
    """Kill notebooks."""
    kill_tasks(open_session(ctx).client, PLURAL, SINGULAR, ids, force=force)


@app.command("logs")
def logs(
    ctx: typer.Context,
    notebook_id: Annotated[str, typer.Argument()],
    follow: FollowOption = False,
    tail: TailOption = None,
    as_json: JsonOption = False,
    head: HeadOption = None,
    agent_ids: AgentIdOption = None,
    container_ids: ContainerIdOption = None,
    rank_ids: RankIdOption = None,
    allocation_ids: AllocationIdOption = None,
    timestamp_before: BeforeOption = None,
    timestamp_after: AfterOption = None,
    level: LevelOption = None,
    sources: SourceOption = None,
    stdtypes: StdtypeOption = None,
) -> None:
    """Print a notebook's logs."""
    client = open_session(ctx).client
    filters = filter_params(
        agent_ids=agent_ids,
        container_ids=container_ids,
        rank_ids=rank_ids,
        allocation_ids=allocation_ids,
        sources=sources,
        stdtypes=stdtypes,
        level=level,
        timestamp_before=timestamp_before,
        timestamp_after=timestamp_after,
    )
    path = task_logs_path(notebook_id)
    print_logs(client, path, follow=follow, tail=tail, as_json=as_json, head=head, filters=filters)


app.add_typer(interactive.set_app(PLURAL, SINGULAR), name="set")
