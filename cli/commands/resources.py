"""`det resources` (alias `res`): historical usage and what it cost.

Determined's three exports, same arguments (`allocations`/`alloc`, `raw`, `aggregated`/`agg`,
CSV unless `--json`), with a cost column after Determined's, and ours: `det resources cost`,
the cost in a window summed per user, workspace, pool, experiment, trial or label.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from cli.client import ApiClient
from cli.errors import ApiError
from cli.options import JsonOption
from cli.render import print_json, print_table
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)

After = Annotated[str, typer.Argument(help="Start of the window (YYYY-MM-DDTHH:MM:SSZ).")]
Before = Annotated[str, typer.Argument(help="End of the window (YYYY-MM-DDTHH:MM:SSZ).")]
StartDate = Annotated[str, typer.Argument(help="First day (YYYY-MM-DD; YYYY-MM with --monthly).")]
EndDate = Annotated[str, typer.Argument(help="Last day (YYYY-MM-DD; YYYY-MM with --monthly).")]
DAILY = "RESOURCE_ALLOCATION_AGGREGATION_PERIOD_DAILY"
MONTHLY = "RESOURCE_ALLOCATION_AGGREGATION_PERIOD_MONTHLY"
GROUPS = ("user", "workspace", "pool", "experiment", "trial", "label")


def fetch_cost(client: ApiClient, path: str) -> dict[str, Any] | None:
    """GET an experiment's or trial's cost; None from a master that does not keep costs
    (Determined's own answers 404), so `describe` still works against it."""
    try:
        reply = client.get(path)
    except ApiError as exc:
        if exc.status in (404, 501):
            return None
        raise
    return reply if isinstance(reply, dict) else None


def _print_text(ctx: typer.Context, path: str, params: dict[str, str]) -> None:
    resp = open_session(ctx).client.request("GET", path, params=params)
    sys.stdout.write(resp.text)


def allocations(ctx: typer.Context, timestamp_after: After, timestamp_before: Before) -> None:
    """A CSV row per allocation in the window, with its slot-hours and cost."""
    params = {"timestamp_after": timestamp_after, "timestamp_before": timestamp_before}
    _print_text(ctx, "/resources/allocation/allocations-csv", params)


def raw(
    ctx: typer.Context,
    timestamp_after: After,
    timestamp_before: Before,
    as_json: JsonOption = False,
) -> None:
    """Each allocation and provisioned instance in the window (CSV, or JSON with --json)."""
    params = {"timestamp_after": timestamp_after, "timestamp_before": timestamp_before}
    if as_json:
        print_json(open_session(ctx).client.get("/api/v1/resources/allocation/raw", params))
    else:
        _print_text(ctx, "/resources/allocation/raw", params)


def aggregated(
    ctx: typer.Context,
    start_date: StartDate,
    end_date: EndDate,
    as_json: JsonOption = False,
    monthly: Annotated[
        bool, typer.Option("--monthly", help="Aggregate by month rather than by day.")
    ] = False,
) -> None:
    """Slot-seconds and cost per day (or month): in all, by user, label, pool and workspace."""
    params = {
        "start_date": start_date,
        "end_date": end_date,
        "period": MONTHLY if monthly else DAILY,
    }
    if as_json:
        print_json(open_session(ctx).client.get("/api/v1/resources/allocation/aggregated", params))
    else:
        _print_text(ctx, "/resources/allocation/aggregated", params)


def cost(
    ctx: typer.Context,
    timestamp_after: After,
    timestamp_before: Before,
    group_by: Annotated[
        str,
        typer.Option("--group-by", "-g", help=f"One of: {', '.join(GROUPS)}."),
    ] = "user",
    as_json: JsonOption = False,
) -> None:
    """What the work in the window cost, summed per user (or --group-by)."""
    if group_by not in GROUPS:
        raise typer.BadParameter(f"must be one of {', '.join(GROUPS)}", param_hint="--group-by")
    reply = open_session(ctx).client.get(
        "/api/v1/resources/cost",
        {
            "groupBy": group_by,
            "timestampAfter": timestamp_after,
            "timestampBefore": timestamp_before,
        },
    )
    if as_json:
        print_json(reply)
        return
    rows = [
        (key, cost_cell(s), f"{s.get('slotHours', 0):.2f}", f"{s.get('unpricedSlotHours', 0):.2f}")
        for key, s in (reply.get("groups") or {}).items()
    ]
    total = reply.get("total") or {}
    rows.append(("(total)", cost_cell(total), f"{total.get('slotHours', 0):.2f}",
                 f"{total.get('unpricedSlotHours', 0):.2f}"))  # fmt: skip
    print_table([group_by.capitalize(), "Cost", "Slot Hours", "Unpriced Slot Hours"], rows)
    machines = reply.get("instancesByPool") or {}
    if group_by == "pool" and machines:
        shares = reply.get("groups") or {}
        idle = [
            (
                pool,
                cost_cell(m),
                f"${m.get('cost', 0) - (shares.get(pool) or {}).get('cost', 0):,.2f}",
            )
            for pool, m in machines.items()
        ]
        print_table(["Pool", "Machines", "Idle"], idle, title="Provisioned machines")


def cost_cell(summary: dict[str, Any] | None) -> str:
    """'$12.34' (with the slot-hours no price covers, when there are any)."""
    if not summary:
        return ""
    usd = float(summary.get("cost") or 0.0)
    unpriced = float(summary.get("unpricedSlotHours") or 0.0)
    text = f"${usd:,.2f}"
    if unpriced > 0:
        text += f" (+{unpriced:.2f} unpriced slot-hours)"
    return text


app.command("allocations", help=allocations.__doc__)(allocations)
app.command("alloc", hidden=True)(allocations)
app.command("raw")(raw)
app.command("aggregated", help=aggregated.__doc__)(aggregated)
app.command("agg", hidden=True)(aggregated)
app.command("cost")(cost)
