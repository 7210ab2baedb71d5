"""`det task`: the cluster's live allocations (trials and commands), and any task's logs."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.logs import print_log_entries, task_log_entries
from cli.options import FollowOption, JsonOption, TailOption
from cli.render import format_time, print_json, print_table, strip_state
from cli.session import open_session

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
