"""`det task`: the cluster's live allocations (trials and commands), any task's logs, and
generic tasks (`create`, `config`, `fork`, `kill`, `pause`, `unpause`; /api/v1/generic-tasks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.client import ApiClient, path_quote
from cli.commands.experiment_create import read_context
from cli.context import ContextEntry, check_size, pack_entries, scan_context
from cli.errors import CliError
from cli.logs import print_log_entries, print_logs, task_log_entries, task_logs_path
from cli.options import FollowOption, JsonOption, TailOption
from cli.render import echo, format_time, print_json, print_table, print_yaml, strip_state, to_yaml
from cli.session import open_session
from cli.yaml_config import apply_overrides, load_mapping

app = typer.Typer(no_args_is_help=True)


def agents_of(summary: dict[str, Any]) -> list[str]:
    return [agent for r in summary.get("resources") or [] for agent in r.get("agentDevices") or {}]


def _type(summary: dict[str, Any]) -> str:
    return str(summary.get("taskType") or "").removeprefix("TASK_TYPE_")


@app.command("list")
def list_tasks(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the live allocations: task, type, name, slots, state, pool, agents (alias: ls)."""
    reply = open_session(ctx).client.get("/api/v1/tasks")
    summaries = reply.get("allocationIdToSummary") or {}
    if as_json:
        print_json(reply)
        return
    ordered = sorted(
        summaries.values(), key=lambda s: (str(s.get("registeredTime")), s.get("allocationId"))
    )
    rows = [
        (
            s.get("taskId"),
            s.get("allocationId"),
            _type(s),
            s.get("name"),
            s.get("slotsNeeded"),
            strip_state(s.get("state")),
            s.get("resourcePool"),
            agents_of(s) or "unassigned",
            format_time(s.get("registeredTime")),
        )
        for s in ordered
    ]
    headers = ["Task ID", "Allocation ID", "Type", "Name", "Slots", "State", "Resource Pool"]
    print_table([*headers, "Agents", "Registered"], rows)


app.command("ls", hidden=True)(list_tasks)


@app.command("logs")
def logs(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(help="Task ID.")],
    follow: FollowOption = False,
    tail: TailOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a task's logs (GET /api/v1/tasks/{id}/logs)."""
    client = open_session(ctx).client
    print_log_entries(task_log_entries(client, task_id, follow=follow, tail=tail), as_json=as_json)


# --- generic tasks -----------------------------------------------------------------------------

TaskIdArg = Annotated[str, typer.Argument(help="Task ID.")]
ProjectOption = Annotated[
    int | None, typer.Option("--project_id", help="Place the task in this project.")
]


def _included(paths: list[Path]) -> list[ContextEntry]:
    """`-i PATH`: each path lands at the top of the context under its own name (a directory
    with what it holds), as the real client's read_v1_context places includes."""
    out: list[ContextEntry] = []
    for path in paths:
        if not path.exists():
            raise CliError(f"included path {path} does not exist")
        info = path.stat()
        top = ContextEntry(path.name, path, path.is_dir(), 0 if path.is_dir() else info.st_size,
                           int(info.st_mtime), info.st_mode)  # fmt: skip
        out.append(top)
        if path.is_dir():
            out += [
                ContextEntry(f"{path.name}/{e.path}", e.source, e.is_dir, e.size, e.mtime, e.mode)
                for e in scan_context(path)
            ]
    return out


def _context_files(context_dir: Path | None, includes: list[Path]) -> list[dict[str, Any]]:
    files = read_context(context_dir)
    if includes:
        extra = _included(includes)
        check_size(extra, includes[0])
        files += pack_entries(extra)
    return files


def _created(client: ApiClient, reply: dict[str, Any], follow: bool) -> None:
    task_id = str(reply.get("taskId") or "")
    if not task_id:
        raise CliError("the master's reply has no task id")
    echo(f"Created task {task_id}")
    if follow:
        print_logs(client, task_logs_path(task_id), follow=True)


@app.command("create")
def create(
    ctx: typer.Context,
    config_file: Annotated[Path, typer.Argument(help="Task config (YAML).")],
    context_dir: Annotated[
        Path | None,
        typer.Option("-c", "--context", help="Directory copied into the task's working dir."),
    ] = None,
    include: Annotated[
        list[Path] | None,
        typer.Option("-i", "--include", help="Another file or directory to copy (repeatable)."),
    ] = None,
    project_id: ProjectOption = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--config", help="Set a config value: key.path=YAML (repeatable)."),
    ] = None,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Follow the task's logs.")] = False,
    fork: Annotated[str | None, typer.Option("--fork", help="Task to fork from.")] = None,
    parent: Annotated[str | None, typer.Option("-p", "--parent", help="Parent task.")] = None,
    inherit_context: Annotated[
        bool, typer.Option("--inherit_context", help="Use the parent's context directory.")
    ] = False,
    no_pause: Annotated[
        bool, typer.Option("--no_pause", help="Refuse pause requests for this task.")
    ] = False,
) -> None:
    """Create a generic task from CONFIG_FILE (POST /api/v1/generic-tasks)."""
    _, config = load_mapping(config_file, "task config")
    config = apply_overrides(config, overrides or [])
    body: dict[str, Any] = {
        "config": to_yaml(config),
        "contextDirectory": _context_files(context_dir, include or []),
        "projectId": project_id,
        "forkedFrom": fork,
        "parentId": parent,
        "inheritContext": inherit_context,
        "noPause": no_pause,
    }
    client = open_session(ctx).client
    _created(client, client.post("/api/v1/generic-tasks", body) or {}, follow)


@app.command("fork")
def fork_task(
    ctx: typer.Context,
    parent_task_id: Annotated[str, typer.Argument(help="Task to fork from.")],
    follow: Annotated[
        bool, typer.Option("-f", "--follow", help="Follow the new task's logs.")
    ] = False,
    project_id: ProjectOption = None,
) -> None:
    """Start a new generic task with another's config and context."""
    body = {"config": "", "contextDirectory": [], "projectId": project_id,
            "forkedFrom": parent_task_id, "inheritContext": False}  # fmt: skip
    client = open_session(ctx).client
    _created(client, client.post("/api/v1/generic-tasks", body) or {}, follow)


@app.command("config")
def task_config(ctx: typer.Context, task_id: TaskIdArg, as_json: JsonOption = False) -> None:
    """Print a generic task's config (YAML; --json: the master's JSON text)."""
    reply = open_session(ctx).client.get(f"/api/v1/tasks/{path_quote(task_id)}/config")
    text = str(reply.get("config") or "")
    if as_json:
        echo(text)
        return
    print_yaml(json.loads(text) if text else {})


@app.command("kill")
def kill_task(
    ctx: typer.Context,
    task_id: TaskIdArg,
    root: Annotated[
        bool, typer.Option("--root", help="Kill the whole tree the task is in, from its root.")
    ] = False,
) -> None:
    """Kill a generic task and the tasks below it."""
    body = {"taskId": task_id, "killFromRoot": root}
    open_session(ctx).client.post(f"/api/v1/tasks/{path_quote(task_id)}/kill", body)
    echo(f"Killed task: {task_id}")


@app.command("pause")
def pause_task(ctx: typer.Context, task_id: TaskIdArg) -> None:
    """Pause a generic task: its container stops and it waits for `det task unpause`."""
    open_session(ctx).client.post(f"/api/v1/tasks/{path_quote(task_id)}/pause")
    echo(f"Paused task: {task_id}")


@app.command("unpause")
def unpause_task(ctx: typer.Context, task_id: TaskIdArg) -> None:
    """Queue a paused generic task again."""
    open_session(ctx).client.post(f"/api/v1/tasks/{path_quote(task_id)}/unpause")
    echo(f"Unpaused task: {task_id}")
