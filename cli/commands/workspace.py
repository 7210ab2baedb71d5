"""`det workspace`: workspaces (and their projects, with `det project`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.client import ApiClient
from cli.commands.resource_pool import fetch_pools, find_pool
from cli.errors import CliError, NotFound
from cli.options import JsonOption
from cli.render import echo, print_json, print_table
from cli.session import open_session
from cli.yaml_config import load_mapping

# How often `delete` asks whether a deletion the master finishes in the background is done.
DELETE_POLL_S = 0.5

app = typer.Typer(no_args_is_help=True)

WorkspaceArg = Annotated[str, typer.Argument(help="Name of the workspace.")]
WorkspaceOption = Annotated[
    str | None, typer.Option("-w", "--workspace-name", help="Workspace name.")
]
SortOption = Annotated[str, typer.Option("--sort-by", help="id or name.")]
OrderOption = Annotated[str, typer.Option("--order-by", help="asc or desc.")]
LimitOption = Annotated[int, typer.Option("--limit", min=1, help="Items per page.")]
OffsetOption = Annotated[int | None, typer.Option("--offset", min=0, help="Items to skip.")]
StorageOption = Annotated[
    str | None,
    typer.Option("--checkpoint-storage-config", help="Storage config as JSON ('{}' removes it)."),
]
StorageFileOption = Annotated[
    Path | None,
    typer.Option("--checkpoint-storage-config-file", help="Storage config file (YAML or JSON)."),
]
ComputePoolOption = Annotated[
    str | None, typer.Option("--default-compute-pool", help="Default compute pool.")
]
AuxPoolOption = Annotated[
    str | None, typer.Option("--default-aux-pool", help="Default auxiliary pool.")
]
MaxSlotsOption = Annotated[
    str | None,
    typer.Option(
        "--max-slots",
        help="Slot quota: the most slots the workspace's jobs hold at once in the pool given by "
        "--resource-pool; 'none' removes it (admin only).",
    ),
]
QuotaPoolOption = Annotated[
    str | None,
    typer.Option(
        "--resource-pool",
        help="Pool of the --max-slots quota (default: the workspace's default compute pool, "
        "else the cluster's).",
    ),
]
HEADERS = ["ID", "Name", "# Projects", "Agent Uid", "Agent Gid", "Agent User", "Agent Group",
           "Default Compute Pool", "Default Aux Pool"]  # fmt: skip
PROJECT_HEADERS = ["ID", "Key", "Name", "Description", "# Experiments", "# Active Experiments"]


def workspace_by_name(client: ApiClient, name: str) -> dict[str, Any]:
    """As the Determined client: an exact, case-sensitive name, then the workspace by id."""
    found = client.get("/api/v1/workspaces", {"nameCaseSensitive": name}).get("workspaces") or []
    if not found:
        raise NotFound(404, f"workspace '{name}' not found")
    return client.get(f"/api/v1/workspaces/{found[0]['id']}")["workspace"]


def render_workspaces(workspaces: list[dict[str, Any]], *, with_storage: bool) -> None:
    rows = []
    for w in workspaces:
        group = w.get("agentUserGroup") or {}
        row = [w.get("id"), w.get("name"), w.get("numProjects"), group.get("agentUid"),
               group.get("agentGid"), group.get("agentUser"), group.get("agentGroup"),
               w.get("defaultComputePool"), w.get("defaultAuxPool")]  # fmt: skip
        if with_storage:
            row += [w.get("checkpointStorageConfig"), _quotas(w)]
        rows.append(row)
    extra = ["Checkpoint Storage Config", "Slot Quotas"] if with_storage else []
    print_table(HEADERS + extra, rows)


def _quotas(ws: dict[str, Any]) -> str:
    quotas = ws.get("slotQuotas") or {}
    return ", ".join(f"{pool}={slots}" for pool, slots in sorted(quotas.items()))


def _max_slots(value: str) -> int | None:
    if value.strip().lower() == "none":
        return None
    try:
        slots = int(value)
    except ValueError:
        raise CliError(f"--max-slots must be a number of slots or 'none', not {value!r}") from None
    if slots < 0:
        raise CliError(f"--max-slots must be >= 0 (or 'none' to remove it), not {slots}")
    return slots


def _quota_pool(client: ApiClient, ws: dict[str, Any], pool: str | None) -> str:
    if pool:
        return pool
    if ws.get("defaultComputePool"):
        return str(ws["defaultComputePool"])
    return str(find_pool(fetch_pools(client), None)["name"])


def render_projects(projects: list[dict[str, Any]]) -> None:
    rows = [
        [
            p.get("id"),
            p.get("key"),
            p.get("name"),
            p.get("description"),
            p.get("numExperiments"),
            p.get("numActiveExperiments"),
        ]
        for p in projects
    ]
    print_table(PROJECT_HEADERS, rows)


def _sort(sort_by: str, order_by: str) -> dict[str, str]:
    if sort_by not in ("id", "name") or order_by not in ("asc", "desc"):
        raise CliError("--sort-by is id or name; --order-by is asc or desc")
    return {"sortBy": f"SORT_BY_{sort_by.upper()}", "orderBy": f"ORDER_BY_{order_by.upper()}"}


@app.command("list")
def list_workspaces(
    ctx: typer.Context,
    sort_by: SortOption = "id",
    order_by: OrderOption = "asc",
    limit: LimitOption = 200,
    offset: OffsetOption = None,
    as_json: JsonOption = False,
) -> None:
    """List workspaces."""
    client = open_session(ctx).client
    params = _sort(sort_by, order_by)
    if offset is not None:
        items = client.get("/api/v1/workspaces", {**params, "limit": limit, "offset": offset})
        workspaces = items.get("workspaces") or []
    else:
        workspaces = client.paginate("/api/v1/workspaces", "workspaces", params, page_size=limit)
    if as_json:
        print_json(workspaces)
    else:
        render_workspaces(workspaces, with_storage=False)


app.command("ls", hidden=True)(list_workspaces)


@app.command("list-projects")
def list_projects(
    ctx: typer.Context,
    workspace_name: WorkspaceArg,
    sort_by: SortOption = "id",
    order_by: OrderOption = "asc",
    limit: LimitOption = 200,
    offset: OffsetOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the projects of a workspace."""
    client = open_session(ctx).client
    ws = workspace_by_name(client, workspace_name)
    projects = client.paginate(
        f"/api/v1/workspaces/{ws['id']}/projects", "projects", _sort(sort_by, order_by)
    )
    projects = projects[offset or 0 : (offset or 0) + limit]
    if as_json:
        print_json(projects)
    else:
        render_projects(projects)


def _storage(config: str | None, config_file: Path | None) -> Any:
    if config is not None and config_file is not None:
        raise CliError(
            "can only provide --checkpoint-storage-config or --checkpoint-storage-config-file"
        )
    if config_file is not None:
        return load_mapping(config_file, "checkpoint storage config")[1]
    if config is None:
        return None
    try:
        return json.loads(config)
    except ValueError as exc:
        raise CliError(f"--checkpoint-storage-config is not JSON: {exc}") from None


@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Unique name of the workspace.")],
    storage: StorageOption = None,
    storage_file: StorageFileOption = None,
    compute_pool: ComputePoolOption = None,
    aux_pool: AuxPoolOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a workspace."""
    body = {
        "name": name,
        "checkpointStorageConfig": _storage(storage, storage_file),
        "defaultComputePool": compute_pool,
        "defaultAuxPool": aux_pool,
    }
    ws = open_session(ctx).client.post("/api/v1/workspaces", body)["workspace"]
    if as_json:
        print_json(ws)
    else:
        render_workspaces([ws], with_storage=True)


@app.command("describe")
def describe(ctx: typer.Context, workspace_name: WorkspaceArg, as_json: JsonOption = False) -> None:
    """Show a workspace."""
    ws = workspace_by_name(open_session(ctx).client, workspace_name)
    if as_json:
        print_json(ws)
    else:
        render_workspaces([ws], with_storage=True)


@app.command("edit")
def edit(
    ctx: typer.Context,
    workspace_name: WorkspaceArg,
    new_name: Annotated[str | None, typer.Option("--name", help="New name.")] = None,
    storage: StorageOption = None,
    storage_file: StorageFileOption = None,
    compute_pool: ComputePoolOption = None,
    aux_pool: AuxPoolOption = None,
    max_slots: MaxSlotsOption = None,
    quota_pool: QuotaPoolOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rename a workspace, change its defaults or (admin) its slot quota in a pool."""
    client = open_session(ctx).client
    ws = workspace_by_name(client, workspace_name)
    body: dict[str, Any] = {
        "name": new_name,
        "checkpointStorageConfig": _storage(storage, storage_file),
        "defaultComputePool": compute_pool,
        "defaultAuxPool": aux_pool,
    }
    if max_slots is not None:
        slots = _max_slots(max_slots)
        body["slotQuotas"] = {_quota_pool(client, ws, quota_pool): slots}
    elif quota_pool is not None:
        raise CliError("--resource-pool names the pool of a --max-slots quota: give --max-slots")
    ws = client.patch(f"/api/v1/workspaces/{ws['id']}", body)["workspace"]
    if as_json:
        print_json(ws)
    else:
        render_workspaces([ws], with_storage=True)


@app.command("list-pools")
def list_pools(
    ctx: typer.Context, workspace_name: WorkspaceArg, as_json: JsonOption = False
) -> None:
    """List the resource pools the workspace may use (unbound ones and those bound to it)."""
    client = open_session(ctx).client
    ws = workspace_by_name(client, workspace_name)
    pools = client.paginate(
        f"/api/v1/workspaces/{ws['id']}/available-resource-pools", "resourcePools"
    )
    if as_json:
        print_json({"workspace": workspace_name, "resourcePools": pools})
        return
    print_table(["Workspace", "Available Resource Pools"], [[workspace_name, ", ".join(pools)]])


def _verb(verb: str, done: str):  # type: ignore[no-untyped-def]
    def command(ctx: typer.Context, workspace_name: WorkspaceArg) -> None:
        client = open_session(ctx).client
        ws = workspace_by_name(client, workspace_name)
        client.post(f"/api/v1/workspaces/{ws['id']}/{verb}")
        echo(f"Successfully {done} workspace {workspace_name}.")

    command.__doc__ = f"{verb.capitalize()} a workspace."
    return command


app.command("archive")(_verb("archive", "archived"))
app.command("unarchive")(_verb("unarchive", "un-archived"))


@app.command("delete")
def delete(
    ctx: typer.Context,
    workspace_name: WorkspaceArg,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a workspace with its projects, their (ended) experiments and checkpoints, its
    ended notebooks, shells, commands and TensorBoards, and its templates."""
    client = open_session(ctx).client
    ws = workspace_by_name(client, workspace_name)
    if not yes and not typer.confirm(
        f'Deleting workspace "{workspace_name}" will result in the unrecoverable deletion of '
        "all its projects, experiments (and their checkpoints), notebooks, shells, commands, "
        "TensorBoards and templates. For a recoverable alternative, see 'archive'. Proceed?"
    ):
        echo("Aborting workspace deletion.")
        return
    path = f"/api/v1/workspaces/{ws['id']}"
    if (client.delete(path) or {}).get("completed", True):
        echo(f"Successfully deleted workspace {workspace_name}.")
        return
    echo(f"Started deletion of workspace {workspace_name}...")
    wait_deleted(client, path, "workspace", "numProjects", "project")
    echo("Workspace deleted successfully.")


def wait_deleted(client: ApiClient, path: str, key: str, count: str, what: str) -> None:
    """Follow a deletion the master finishes in the background, as Determined's client does:
    until the object is gone (404), or its deletion failed (the master's reason)."""
    while True:
        time.sleep(DELETE_POLL_S)
        try:
            row = client.get(path)[key]
        except NotFound:
            return
        if row.get("state") == "WORKSPACE_STATE_DELETE_FAILED":
            raise CliError(f"deletion failed: {row.get('errorMessage') or 'no reason given'}")
        echo(f"Remaining {what} count: {row.get(count, 0)}")
