"""`det tensorboard`: TensorBoard over experiments' or trials' event files, via the proxy."""

from __future__ import annotations

import webbrowser
from typing import Annotated

import typer

from cli import interactive
from cli.client import path_quote
from cli.commands.notebook import ConfigFile, Context, Overrides, Template, Volumes
from cli.errors import CliError
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
PLURAL, SINGULAR = "tensorboards", "tensorboard"


@app.command("start")
def start(
    ctx: typer.Context,
    experiment_ids: Annotated[list[int] | None, typer.Argument(help="Experiment IDs.")] = None,
    trial_ids: Annotated[
        list[int] | None, typer.Option("-t", "--trial-ids", help="Trial IDs (repeatable).")
    ] = None,
    config_file: ConfigFile = None,
    overrides: Overrides = None,
    volumes: Volumes = None,
    context_dir: Context = None,
    template: Template = None,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Do not open it.")] = False,
    detach: Annotated[bool, typer.Option("-d", "--detach", help="Print the ID; return.")] = False,
    workspace_name: WorkspaceNameOption = None,
) -> None:
    """Start TensorBoard over the given experiments (or --trial-ids)."""
    if not experiment_ids and not trial_ids:
        raise CliError("give experiment IDs, or trial IDs with --trial-ids")
    session = open_session(ctx)
    config = interactive.load_config(config_file, overrides or [], volumes or [])
    task = interactive.launch(
        session.client, PLURAL, SINGULAR, config, context_dir, template,
        experimentIds=list(experiment_ids or []), trialIds=list(trial_ids or []),
        **workspace_field(session.client, workspace_name),
    )  # fmt: skip
    if detach:
        echo(task["id"])
        return
    interactive.announce(SINGULAR, task)
    interactive.wait_ready(session.client, task["id"], SINGULAR, global_options(ctx).sleep)
    url = interactive.task_url(session.client.master_url, task, "tensorboard")
    if not no_browser:
        webbrowser.open(url)
    echo(f"TensorBoard is running at: {url}")


@app.command("open")
def open_(ctx: typer.Context, tensorboard_id: Annotated[str, typer.Argument()]) -> None:
    """Open a running TensorBoard in the browser."""
    session = open_session(ctx)
    task = session.client.get(f"/api/v1/{PLURAL}/{path_quote(tensorboard_id)}")[SINGULAR]
    url = interactive.task_url(session.client.master_url, task, "tensorboard")
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
    """List your TensorBoards (--all: everyone's) (alias: ls)."""
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
        tensorboards=True,
    )


app.command("ls", hidden=True)(list_)


@app.command("kill")
def kill(
    ctx: typer.Context,
    ids: Annotated[list[str], typer.Argument(help="IDs.")],
    force: ForceOption = False,
) -> None:
    """Kill TensorBoards."""
    kill_tasks(open_session(ctx).client, PLURAL, SINGULAR, ids, force=force)


@app.command("logs")
def logs(
    ctx: typer.Context,
    tensorboard_id: Annotated[str, typer.Argument()],
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
    """Print a TensorBoard's logs."""
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
    path = task_logs_path(tensorboard_id)
    print_logs(client, path, follow=follow, tail=tail, as_json=as_json, head=head, filters=filters)


app.add_typer(interactive.set_app(PLURAL, SINGULAR), name="set")
