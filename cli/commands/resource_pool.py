"""`det resource-pool` (alias `rp`): the pools, their agents and slots, and their queues."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import typer

from cli.client import ApiClient
from cli.errors import CliError
from cli.options import JsonOption
from cli.render import format_time, print_json, print_record, print_table
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)

POOLS_PATH = "/api/v1/resource-pools"


def fetch_pools(client: ApiClient) -> list[dict[str, Any]]:
    return client.paginate(POOLS_PATH, "resourcePools")


def find_pool(pools: list[dict[str, Any]], name: str | None) -> dict[str, Any]:
    """The pool called `name`, or the default compute pool when `name` is None."""
    for pool in pools:
        if (name is None and pool.get("defaultComputePool")) or pool.get("name") == name:
            return pool
    known = ", ".join(sorted(str(p.get("name")) for p in pools)) or "none"
    if name is None:
        raise CliError(f"the master has no default compute pool (pools: {known})")
    raise CliError(f"resource pool {name!r} not found (pools: {known})")


def is_priority(pool: dict[str, Any]) -> bool:
    return pool.get("schedulerType") == "SCHEDULER_TYPE_PRIORITY"


def _enum(value: Any, prefix: str) -> str:
    """`SCHEDULER_TYPE_FAIR_SHARE` → `fair_share` (display only)."""
    return "" if value is None else str(value).removeprefix(prefix).lower()


def scheduler_name(pool: dict[str, Any]) -> str:
    return _enum(pool.get("schedulerType"), "SCHEDULER_TYPE_")


def _priority_detail(pool: dict[str, Any]) -> dict[str, Any] | None:
    details = pool.get("details") or {}
    detail = details.get("priorityScheduler")
    return detail if isinstance(detail, dict) else None


def _preemption(pool: dict[str, Any]) -> Any:
    detail = _priority_detail(pool)
    if detail is not None:
        return detail.get("preemption")
    return pool.get("preemptible")


def _default_priority(pool: dict[str, Any]) -> Any:
    detail = _priority_detail(pool)
    return detail.get("defaultPriority") if detail is not None else None


def _slots(pool: dict[str, Any]) -> str:
    return f"{pool.get('slotsUsed', 0)}/{pool.get('slotsAvailable', 0)}"


def _aux(pool: dict[str, Any]) -> str:
    return f"{pool.get('auxContainersRunning', 0)}/{pool.get('auxContainerCapacity', 0)}"


def _pass_took(pool: dict[str, Any]) -> str:
    ms = pool.get("lastPassMs")
    return f"{ms:.1f} ms" if isinstance(ms, int | float) else ""


def _wait_reasons(pool: dict[str, Any]) -> str:
    reasons = pool.get("waitReasons") or {}
    return ", ".join(f"{k}={v}" for k, v in sorted(reasons.items()))


def _defaults(pool: dict[str, Any]) -> str:
    """Which kinds of task go to this pool when they name none: `compute`, `aux`, both or ''."""
    marks = (("compute", "defaultComputePool"), ("aux", "defaultAuxPool"))
    return ", ".join(mark for mark, key in marks if pool.get(key))


LIST_HEADERS = [
    "Name",
    "Default For",
    "Type",
    "Scheduler",
    "Fitting",
    "Preemption",
    "Default Priority",
    "Agents",
    "Slots Used",
    "Aux Used",
    "Queued",
    "Running",
    "Last Pass",
    "Took",
    "Wait Reasons",
]


def _row(pool: dict[str, Any]) -> list[Any]:
    return [
        pool.get("name"),
        _defaults(pool),
        _enum(pool.get("type"), "RESOURCE_POOL_TYPE_"),
        scheduler_name(pool),
        _enum(pool.get("schedulerFittingPolicy"), "FITTING_POLICY_"),
        _preemption(pool),
        _default_priority(pool),
        pool.get("numAgents"),
        _slots(pool),
        _aux(pool),
        pool.get("queuedJobs"),
        pool.get("runningJobs"),
        format_time(pool.get("lastPassAt")),
        _pass_took(pool),
        _wait_reasons(pool),
    ]


@app.command("list")
def list_pools(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the resource pools with their scheduler, capacity and queue (alias: ls)."""
    pools = fetch_pools(open_session(ctx).client)
    if as_json:
        print_json({"resourcePools": pools})
        return
    print_table(LIST_HEADERS, [_row(p) for p in pools])


app.command("ls", hidden=True)(list_pools)


@app.command("describe")
def describe(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Resource pool name.")],
    as_json: JsonOption = False,
) -> None:
    """Show one resource pool: scheduler, agents, slots, queue and the last scheduling pass;
    for a pool with a provider, its instances, recent scaling decisions and launch errors."""
    client = open_session(ctx).client
    pool = find_pool(fetch_pools(client), name)
    provisioner = None
    if pool.get("type") in DYNAMIC_TYPES:
        provisioner = client.get(f"{POOLS_PATH}/{quote(name, safe='')}/provisioner")
    if as_json:
        print_json({**pool, "provisioner": provisioner} if provisioner is not None else pool)
        return
    stats = pool.get("stats") or {}
    pairs: list[tuple[str, Any]] = [
        ("Name", pool.get("name")),
        ("Description", pool.get("description")),
        ("Type", _enum(pool.get("type"), "RESOURCE_POOL_TYPE_")),
        ("Default For", _defaults(pool)),
        ("Scheduler", scheduler_name(pool)),
        ("Fitting Policy", _enum(pool.get("schedulerFittingPolicy"), "FITTING_POLICY_")),
        ("Preemption", _preemption(pool)),
        ("Default Priority", _default_priority(pool)),
        ("Agents", pool.get("numAgents")),
        ("Slot Type", _enum(pool.get("slotType"), "TYPE_")),
        ("Slots (used/total)", _slots(pool)),
        ("Aux Containers (running/capacity)", _aux(pool)),
        ("Aux Capacity per Agent", pool.get("auxContainerCapacityPerAgent")),
        ("Min/Max Agents", f"{pool.get('minAgents', 0)}/{pool.get('maxAgents', 0)}"),
        ("Queued Jobs", pool.get("queuedJobs")),
        ("Running Jobs", pool.get("runningJobs")),
        ("Queued Allocations", stats.get("queuedCount")),
        ("Scheduled Allocations", stats.get("scheduledCount")),
        ("Last Pass", format_time(pool.get("lastPassAt"))),
        ("Last Pass Took", _pass_took(pool)),
        ("Wait Reasons", _wait_reasons(pool)),
    ]
    print_record(pairs, title=f"Resource pool {pool.get('name')}")
    if provisioner is not None:
        _print_provisioner(provisioner)


DYNAMIC_TYPES = ("RESOURCE_POOL_TYPE_AWS", "RESOURCE_POOL_TYPE_GCP")
DECISIONS_PRINTED = 20


def _age(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return ""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _agent(instance: dict[str, Any]) -> str:
    if not instance.get("agentConnected"):
        return "not connected"
    return "idle" if instance.get("agentIdle") else "busy"


def _cost(hourly: Any, budget: Any) -> str:
    text = f"{hourly:.2f}/h" if isinstance(hourly, int | float) else ""
    return f"{text} of max {budget:g}/h" if isinstance(budget, int | float) else text


def _print_offers(offers: list[dict[str, Any]]) -> None:
    """The pool's offers with their price and, while cold, until when and the cloud's reason."""
    rows = [
        [
            o.get("instanceType"),
            o.get("location") or "default",
            ("spot" if o.get("spot") else "on-demand")
            + (" (fallback)" if o.get("fallback") else ""),
            o.get("slots"),
            f"{o.get('pricePerHour', 0):.3f}",
            format_time(o.get("coldUntil")) if o.get("coldUntil") else "",
            o.get("lastError") or "",
        ]
        for o in offers
    ]
    headers = ["Type", "Subnet/Zone", "Market", "Slots", "USD/h", "Cold Until", "Last Error"]
    print_table(headers, rows, title="Offers")


def _print_provisioner(view: dict[str, Any]) -> None:
    pairs: list[tuple[str, Any]] = [
        ("Provider", f"{view.get('provider')}{' (spot)' if view.get('spot') else ''}"),
        ("Instances (min/max)", f"{view.get('minInstances')}/{view.get('maxInstances')}"),
        ("Slots per Instance", view.get("slotsPerInstance")),
        ("Wanted New Instances", view.get("desiredNewInstances")),
        ("Fallback Pool", view.get("fallbackPool") or ""),
        ("Launch Error", view.get("launchError") or ""),
        ("Launch Error Until", format_time(view.get("launchErrorUntil"))),
        ("Cloud Listing Error", view.get("lastListError") or ""),
        ("Last Tick", format_time(view.get("lastTickAt"))),
    ]
    if view.get("offers"):
        pairs += [
            ("Hourly Cost (USD)", _cost(view.get("hourlyCost"), view.get("maxHourlyCost"))),
            ("Waiting For Capacity", view.get("waitingReason") or ""),
        ]
    print_record(pairs, title="Provisioner")
    if view.get("offers"):
        _print_offers(view["offers"])
    rows = [
        [
            i.get("id"),
            i.get("state"),
            _age(i.get("ageSeconds")),
            "spot" if i.get("spot") else "on-demand",
            _agent(i),
            i.get("problem") or "",
        ]
        for i in view.get("instances") or []
    ]
    print_table(["Instance", "State", "Age", "Market", "Agent", "Problem"], rows, title="Instances")
    decisions = (view.get("decisions") or [])[:DECISIONS_PRINTED]
    print_table(
        ["At", "Decision", "Reason"],
        [[format_time(d.get("at")), d.get("kind"), d.get("reason")] for d in decisions],
        title="Recent scaling decisions (newest first)",
    )


# --- `det rp bindings …`: which workspaces may use a pool (Determined 0.38.1's commands) ------

bindings_app = typer.Typer(no_args_is_help=True, help="Manage resource pool bindings.")
app.add_typer(bindings_app, name="bindings")

PoolArg = Annotated[str, typer.Argument(help="Name of the resource pool.")]
WorkspaceNamesArg = Annotated[list[str], typer.Argument(help="Names of the workspaces.")]


def _bindings_path(pool: str) -> str:
    return f"{POOLS_PATH}/{quote(pool, safe='')}/workspace-bindings"


def _change_bindings(ctx: typer.Context, method: str, pool: str, names: list[str]) -> None:
    body = {"resourcePoolName": pool, "workspaceNames": names}
    open_session(ctx).client.call(method, _bindings_path(pool), json_body=body)


@bindings_app.command("add")
def add_binding(ctx: typer.Context, pool_name: PoolArg, workspace_names: WorkspaceNamesArg) -> None:
    """Bind the pool to these workspaces: only bound workspaces' work may use it (admin)."""
    _change_bindings(ctx, "POST", pool_name, workspace_names)
    print(
        f'added bindings between the resource pool "{pool_name}" '
        f"and the following workspaces: {workspace_names}"
    )


@bindings_app.command("remove")
def remove_binding(
    ctx: typer.Context, pool_name: PoolArg, workspace_names: WorkspaceNamesArg
) -> None:
    """Unbind the pool from these workspaces; with no binding left it is open to all (admin)."""
    _change_bindings(ctx, "DELETE", pool_name, workspace_names)
    print(
        f'removed bindings between the resource pool "{pool_name}" '
        f"and the following workspaces: {workspace_names}"
    )


@bindings_app.command("replace")
def replace_bindings(
    ctx: typer.Context, pool_name: PoolArg, workspace_names: WorkspaceNamesArg
) -> None:
    """Bind the pool to exactly these workspaces (admin)."""
    _change_bindings(ctx, "PUT", pool_name, workspace_names)
    print(
        f'replaced bindings of the resource pool "{pool_name}" '
        f"with those to the following workspaces: {workspace_names}"
    )


@bindings_app.command("list-workspaces")
def list_bound_workspaces(
    ctx: typer.Context, pool_name: PoolArg, as_json: JsonOption = False
) -> None:
    """List the workspaces bound to the pool (none: every workspace may use it)."""
    client = open_session(ctx).client
    ids = client.paginate(_bindings_path(pool_name), "workspaceIds")
    wanted = set(ids)
    names = [
        w["name"] for w in client.paginate("/api/v1/workspaces", "workspaces") if w["id"] in wanted
    ]
    if as_json:
        print_json({"resourcePool": pool_name, "workspaceIds": ids, "workspaces": names})
        return
    print_table(["resource pool", "workspaces"], [[pool_name, ", ".join(names)]])
