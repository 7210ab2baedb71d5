"""`det cmd|notebook|tensorboard list` and `kill` with the options of Determined 0.38.1's
client: `--workspace-name/-w`, `--sort-by`, `--order-by`, `--quiet/-q`, `--csv` for lists,
`--force/-f` for kills (go on past a task that cannot be killed)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from cli.client import ApiClient, path_quote
from cli.commands.workspace import workspace_by_name
from cli.errors import CliError
from cli.render import echo, format_time, print_json, print_rows, print_warning, strip_state


class SortBy(StrEnum):
    """The fields Determined's client sorts these lists by (its table's keys, and startTime)."""

    id = "id"
    username = "username"
    description = "description"
    state = "state"
    exitStatus = "exitStatus"
    resourcePool = "resourcePool"
    workspaceName = "workspaceName"
    startTime = "startTime"


class OrderBy(StrEnum):
    asc = "asc"
    desc = "desc"


SortByOption = Annotated[
    SortBy, typer.Option("--sort-by", help="Sort by this field.", case_sensitive=True)
]
OrderByOption = Annotated[OrderBy, typer.Option("--order-by", help="Ascending or descending.")]
QuietOption = Annotated[bool, typer.Option("-q", "--quiet", help="Only the IDs.")]
WorkspaceNameOption = Annotated[
    str | None,
    typer.Option("-w", "--workspace-name", help="Only this workspace's.", show_default=False),
]
ForceOption = Annotated[
    bool,
    typer.Option("-f", "--force", help="Go on to the next ID when one cannot be killed."),
]


def _sort_key(field: str) -> Any:
    # None sorts first, and mixed types as text, where Determined's client would fail.
    def key(item: dict[str, Any]) -> tuple[int, Any]:
        value = item.get(field)
        if value is None:
            return (0, "")
        return (1, value) if isinstance(value, int | float) else (2, str(value))

    return key


def sorted_tasks(items: list[dict[str, Any]], sort_by: str, order_by: str) -> list[dict[str, Any]]:
    """The list in Determined's order: by `sort_by`, ascending unless `order_by` is desc."""
    return sorted(items, key=_sort_key(sort_by), reverse=order_by == "desc")


def workspace_field(client: ApiClient, workspace_name: str | None) -> dict[str, Any]:
    """`{"workspaceId": …}` for a launch in the named workspace (`-w`), else nothing."""
    if workspace_name is None:
        return {}
    return {"workspaceId": workspace_by_name(client, workspace_name)["id"]}


def workspace_names(client: ApiClient) -> dict[int, str]:
    try:
        found = client.paginate("/api/v1/workspaces", "workspaces")
    except CliError:
        return {}
    return {int(w["id"]): str(w.get("name")) for w in found if w.get("id") is not None}


def list_tasks(
    client: ApiClient,
    plural: str,
    *,
    username: str | None,
    workspace_name: str | None = None,
    sort_by: str = "startTime",
    order_by: str = "asc",
    quiet: bool = False,
    as_json: bool = False,
    as_csv: bool = False,
    tensorboards: bool = False,
) -> None:
    params: dict[str, Any] = {"users": username} if username else {}
    if workspace_name is not None:
        params["workspaceId"] = workspace_by_name(client, workspace_name)["id"]
    found = client.paginate(f"/api/v1/{plural}", plural, params)
    if quiet:
        for item in found:
            echo(str(item.get("id")))
        return
    names = workspace_names(client)
    for item in found:
        ws = item.get("workspaceId")
        if ws is not None:
            item.setdefault("workspaceName", names.get(int(ws), f"missing workspace id {ws}"))
    found = sorted_tasks(found, sort_by, order_by)
    if as_json:
        print_json({plural: found})
        return
    headers = ["ID", "User", "Description", "State", "Exit Status", "Resource Pool", "Started"]
    if tensorboards:
        headers.insert(4, "Experiment IDs")
    rows = []
    for t in found:
        row = [
            t.get("id"), t.get("username"), t.get("description"), strip_state(t.get("state")),
            t.get("exitStatus"), t.get("resourcePool"), format_time(t.get("startTime")),
        ]  # fmt: skip
        if tensorboards:
            row.insert(4, ",".join(str(i) for i in t.get("experimentIds") or []))
        rows.append(tuple(row))
    print_rows(headers, rows, as_csv=as_csv)


def kill_tasks(
    client: ApiClient, plural: str, singular: str, ids: list[str], *, force: bool = False
) -> None:
    """Kill each; on a failure stop (naming the ones left alone) unless `force`, as Determined."""
    for i, task_id in enumerate(ids):
        try:
            client.post(f"/api/v1/{plural}/{path_quote(task_id)}/kill")
        except CliError as exc:
            if not force:
                for ignored in ids[i + 1 :]:
                    echo(f"Cowardly not killing {ignored}")
                raise
            print_warning(f"Skipping: {exc.message}")
            continue
        echo(f"Killed {singular} {task_id}")
