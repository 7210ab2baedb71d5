"""What `det notebook`, `det tensorboard` and `det shell` share: launch, wait until ready,
list, kill, logs."""

from __future__ import annotations

import time
import urllib.parse
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.client import ApiClient, path_quote
from cli.commands.experiment_create import read_context
from cli.errors import CliError
from cli.render import echo, format_time, print_json, print_table, stderr_console, strip_state
from cli.session import open_session
from cli.yaml_config import apply_overrides, load_mapping

READY_TIMEOUT_S = 30 * 60
POLL_S = 0.5


def load_config(config_file: Path | None, overrides: list[str], volumes: list[str]) -> dict:
    config: dict[str, Any] = {}
    if config_file is not None:
        _, config = load_mapping(config_file, "config")
    config = apply_overrides(config, overrides)
    for volume in volumes:
        host, sep, container = volume.partition(":")
        if not sep or not host or not container:
            raise CliError(f"--volume {volume!r}: expected HOST_PATH:CONTAINER_PATH")
        config.setdefault("bind_mounts", []).append(
            {"host_path": host, "container_path": container}
        )
    return config


def launch(
    client: ApiClient, plural: str, singular: str, config: dict[str, Any],
    context_dir: Path | None, template: str | None, **extra: Any,
) -> dict[str, Any]:  # fmt: skip
    body: dict[str, Any] = {"config": config, **extra}
    files = read_context(context_dir)
    if files:
        body["files"] = files
    if template:
        body["templateName"] = template
    reply = client.post(f"/api/v1/{plural}", body) or {}
    task = reply.get(singular) or {}
    if not task.get("id"):
        raise CliError(f"the master's reply has no {singular} id")
    return task


def wait_ready(client: ApiClient, task_id: str, what: str, sleep: Any = time.sleep) -> None:
    """Until the task's allocation is ready (as the real client waits), or it ended."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        task = client.get(f"/api/v1/tasks/{path_quote(task_id)}").get("task") or {}
        if task.get("endTime"):
            raise CliError(ended_message(client, task, task_id, what))
        allocations = task.get("allocations") or []
        if allocations and allocations[0].get("isReady"):
            return
        sleep(POLL_S)
    raise CliError(f"{what} {task_id} was not ready after {READY_TIMEOUT_S // 60} minutes")


LAST_LINES = 12


def ended_message(client: ApiClient, task: dict[str, Any], task_id: str, what: str) -> str:
    """Why a task that ended before it was ready did (its allocation's exit reason) and its last
    log lines, where a shell's sshd, a notebook's JupyterLab or a startup hook says what went
    wrong; the whole log stays a command away."""
    from cli.logs import task_log_entries

    reasons = [a.get("exitReason") for a in task.get("allocations") or [] if a.get("exitReason")]
    head = f"{what} {task_id} ended before it was ready"
    head += f" ({reasons[-1]})" if reasons else ""
    try:
        entries = list(task_log_entries(client, path_quote(task_id), tail=LAST_LINES))
    except CliError:
        entries = []
    lines = [str(e.get("log") or e.get("message") or "").rstrip("\n") for e in entries]
    lines = [line for line in lines if line.strip()]
    body = "".join(f"\n  {line}" for line in lines)
    intro = f"\nits last {len(lines)} log lines:" if lines else ""
    return f"{head}{intro}{body}\nall of its logs: det {what} logs {task_id}"


def task_url(master: str, task: dict[str, Any], task_type: str) -> str:
    """The page Determined's client prints: /det/interactive/… which leads to the service."""
    address = task.get("serviceAddress") or f"/proxy/{task['id']}/"
    wait = f"/det/wait/{task_type}/{task['id']}?serviceAddr={address}"
    return (
        f"{master}/det/interactive/{task['id']}/{task_type}/"
        f"{urllib.parse.quote(task.get('description') or '')}/{task.get('resourcePool', '')}/"
        f"{urllib.parse.quote_plus(wait)}"
    )


def list_tasks(
    client: ApiClient, plural: str, username: str | None, as_json: bool, extra_cols: bool = False
) -> None:
    params = {"users": username} if username else {}
    found = client.paginate(f"/api/v1/{plural}", plural, params)
    if as_json:
        print_json({plural: found})
        return
    headers = ["ID", "User", "Description", "State", "Exit Status", "Resource Pool", "Started"]
    if extra_cols:
        headers.insert(4, "Experiment IDs")
    rows = []
    for t in found:
        row = [
            t.get("id"), t.get("username"), t.get("description"), strip_state(t.get("state")),
            t.get("exitStatus"), t.get("resourcePool"), format_time(t.get("startTime")),
        ]  # fmt: skip
        if extra_cols:
            row.insert(4, ",".join(str(i) for i in t.get("experimentIds") or []))
        rows.append(tuple(row))
    print_table(headers, rows)


def kill(client: ApiClient, plural: str, singular: str, ids: list[str]) -> None:
    for task_id in ids:
        client.post(f"/api/v1/{plural}/{path_quote(task_id)}/kill")
        echo(f"Killed {singular} {task_id}")


def set_app(plural: str, singular: str) -> typer.Typer:
    """`det <kind> set priority ID N`, as Determined's client has it for each command-like kind."""
    app = typer.Typer(no_args_is_help=True, help=f"Change a {singular}'s attributes.")

    @app.command("priority")
    def priority(
        ctx: typer.Context,
        # No names from this function in the annotations: they are evaluated as module globals.
        task_id: Annotated[str, typer.Argument(metavar="ID", help="Its ID.")],
        value: Annotated[int, typer.Argument(metavar="PRIORITY", help="1 to 99; lower first.")],
    ) -> None:
        """Give the task's job a new priority (owner or admin)."""
        client = open_session(ctx).client
        client.post(f"/api/v1/{plural}/{path_quote(task_id)}/set_priority", {"priority": value})
        echo(f"Set priority of {singular} {task_id} to {value}")

    return app


def announce(singular: str, task: dict[str, Any]) -> None:
    stderr_console().print(f"Launched {singular} {task['id']} ({task.get('description', '')})")
