"""`det notebook`: JupyterLab on the cluster, reached through the master's proxy."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from cli import interactive
from cli.client import path_quote
from cli.logs import print_logs, task_logs_path
from cli.options import FollowOption, JsonOption, TailOption
from cli.render import echo
from cli.session import global_options, open_session

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
) -> None:
    """Start JupyterLab; waits until it answers and prints its address."""
    session = open_session(ctx)
    config = interactive.load_config(config_file, overrides or [], volumes or [])
    task = interactive.launch(session.client, PLURAL, SINGULAR, config, context_dir, template)
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
) -> None:
    """List your notebooks (--all: everyone's) (alias: ls)."""
    session = open_session(ctx)
    user = None if show_all else session.username
    interactive.list_tasks(session.client, PLURAL, user, as_json)


app.command("ls", hidden=True)(list_)


@app.command("kill")
def kill(ctx: typer.Context, ids: Annotated[list[str], typer.Argument(help="IDs.")]) -> None:
    """Kill notebooks."""
    interactive.kill(open_session(ctx).client, PLURAL, SINGULAR, ids)


@app.command("logs")
def logs(
    ctx: typer.Context,
    notebook_id: Annotated[str, typer.Argument()],
    follow: FollowOption = False,
    tail: TailOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a notebook's logs."""
    client = open_session(ctx).client
    print_logs(client, task_logs_path(notebook_id), follow=follow, tail=tail, as_json=as_json)


app.add_typer(interactive.set_app(PLURAL, SINGULAR), name="set")
