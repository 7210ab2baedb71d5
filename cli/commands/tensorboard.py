"""`det tensorboard`: TensorBoard over experiments' or trials' event files, via the proxy."""

from __future__ import annotations

import webbrowser
from typing import Annotated

import typer

from cli import interactive
from cli.client import path_quote
from cli.commands.notebook import ConfigFile, Context, Overrides, Template, Volumes
from cli.errors import CliError
from cli.logs import print_logs, task_logs_path
from cli.options import FollowOption, JsonOption, TailOption
from cli.render import echo
from cli.session import global_options, open_session

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
) -> None:
    """Start TensorBoard over the given experiments (or --trial-ids)."""
    if not experiment_ids and not trial_ids:
        raise CliError("give experiment IDs, or trial IDs with --trial-ids")
    session = open_session(ctx)
    config = interactive.load_config(config_file, overrides or [], volumes or [])
    task = interactive.launch(
        session.client, PLURAL, SINGULAR, config, context_dir, template,
        experimentIds=list(experiment_ids or []), trialIds=list(trial_ids or []),
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
) -> None:
    """List your TensorBoards (--all: everyone's) (alias: ls)."""
    session = open_session(ctx)
    user = None if show_all else session.username
    interactive.list_tasks(session.client, PLURAL, user, as_json, extra_cols=True)


app.command("ls", hidden=True)(list_)


@app.command("kill")
def kill(ctx: typer.Context, ids: Annotated[list[str], typer.Argument(help="IDs.")]) -> None:
    """Kill TensorBoards."""
    interactive.kill(open_session(ctx).client, PLURAL, SINGULAR, ids)


@app.command("logs")
def logs(
    ctx: typer.Context,
    tensorboard_id: Annotated[str, typer.Argument()],
    follow: FollowOption = False,
    tail: TailOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a TensorBoard's logs."""
    client = open_session(ctx).client
    print_logs(client, task_logs_path(tensorboard_id), follow=follow, tail=tail, as_json=as_json)


app.add_typer(interactive.set_app(PLURAL, SINGULAR), name="set")
