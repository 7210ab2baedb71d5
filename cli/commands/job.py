"""`det job` (alias `j`): the job queue, and changes to a job's place in it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from cli.commands.job_batch import update_batch
from cli.commands.resource_pool import fetch_pools, find_pool, is_priority
from cli.options import CsvOption, JsonOption, UsageMistake, YamlOption
from cli.pages import Pages, PagesOption, fetch_pages
from cli.render import (
    echo,
    format_number,
    format_time,
    print_json,
    print_rows,
    print_yaml,
    strip_state,
)
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)
app.command("update-batch")(update_batch)

JOBS_PATH = "/api/v1/job-queues-v2"
UPDATE_PATH = "/api/v1/job-queues"
PAGE_SIZE = 100  # the real client's page size for this list


def _unwrap(entry: dict[str, Any]) -> dict[str, Any]:
    """GetJobsV2 wraps each job as `{"full": v1Job}` (or `{"limited": …}` without access)."""
    job = entry.get("full") or entry.get("limited")
    return job if isinstance(job, dict) else {}


def _jobs_ahead(job: dict[str, Any]) -> Any:
    ahead = (job.get("summary") or {}).get("jobsAhead")
    return ahead if isinstance(ahead, int) and ahead > -1 else "N/A"


def _job_name(job: dict[str, Any]) -> str:
    name = str(job.get("name", ""))
    if job.get("type") == "TYPE_EXPERIMENT" and job.get("entityId"):
        return f"{name} ({job['entityId']})"
    return name


def _default_pool(pools: list[dict[str, Any]]) -> dict[str, Any]:
    return next((p for p in pools if p.get("defaultComputePool")), pools[0] if pools else {})


def _order_column(
    jobs: list[dict[str, Any]], pools: list[dict[str, Any]], selected: dict[str, Any] | None
) -> tuple[str, Callable[[dict[str, Any]], str]]:
    """("Priority" or "Weight", job → cell), by the scheduler of the pool the jobs are in.

    With -p that is the selected pool, as in Determined. Without it every pool's jobs are
    listed; where their schedulers differ, each cell says which of the two it shows.
    """
    kinds = {p.get("name"): is_priority(p) for p in pools}

    def priority_pool(job: dict[str, Any]) -> bool:
        if selected is not None:
            return is_priority(selected)
        return kinds.get(job.get("resourcePool"), True)

    def value(job: dict[str, Any], priority: bool) -> str:
        raw = job.get("priority") if priority else job.get("weight")
        return "" if raw is None else format_number(raw)

    used = {priority_pool(j) for j in jobs} or {is_priority(selected or _default_pool(pools))}
    if len(used) == 1:
        priority = used.pop()
        return ("Priority" if priority else "Weight"), lambda j: value(j, priority)

    def mixed(job: dict[str, Any]) -> str:
        priority = priority_pool(job)
        return f"{'priority' if priority else 'weight'} {value(job, priority)}"

    return "Priority / Weight", mixed


@app.command("list")
def list_jobs(
    ctx: typer.Context,
    resource_pool: Annotated[
        str | None,
        typer.Option(
            "-p",
            "--resource-pool",
            help="Only this pool's queue (default: every pool).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="Show at most N jobs.", show_default=False),
    ] = None,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip the first N jobs.")] = 0,
    reverse: Annotated[bool, typer.Option("--reverse", help="Last in the queue first.")] = False,
    pages: PagesOption = None,
    as_json: JsonOption = False,
    as_yaml: YamlOption = False,
    as_csv: CsvOption = False,
    _as_table: Annotated[bool, typer.Option("--table", help="A table (the default).")] = False,
) -> None:
    """List the job queue in scheduling order, with why each queued job waits (alias: ls)."""
    client = open_session(ctx).client
    pools = fetch_pools(client)
    selected = find_pool(pools, resource_pool) if resource_pool else None
    params: dict[str, Any] = {"orderBy": "ORDER_BY_DESC" if reverse else "ORDER_BY_ASC"}
    if resource_pool:
        params["resourcePool"] = resource_pool
    entries = fetch_pages(
        client,
        JOBS_PATH,
        "jobs",
        params,
        limit=limit or PAGE_SIZE,
        offset=offset,
        # --limit alone: one page (ours); no --limit: every page of the real client's size
        pages=pages if limit or pages is not None else Pages.all,
    )
    jobs = [job for job in map(_unwrap, entries) if job]
    if as_json:
        print_json({"jobs": jobs})
        return
    if as_yaml:
        print_yaml({"jobs": jobs})
        return
    order_header, order_value = _order_column(jobs, pools, selected)
    several_pools = resource_pool is None and len(pools) > 1
    rows = []
    for job in jobs:
        row = [
            _jobs_ahead(job),
            job.get("jobId"),
            str(job.get("type", "")).removeprefix("TYPE_"),
            _job_name(job),
            order_value(job),
            format_time(job.get("submissionTime")),
            f"{job.get('allocatedSlots', 0)}/{job.get('requestedSlots', 0)}",
            strip_state((job.get("summary") or {}).get("state")),
            job.get("username"),
        ]
        if several_pools:
            row.append(job.get("resourcePool"))
        row.append(job.get("waitReason"))
        rows.append(row)
    headers = ["#", "ID", "Type", "Job Name", order_header, "Submitted"]
    headers += ["Slots (acquired/needed)", "State", "User"]
    if several_pools:
        headers.append("Resource Pool")
    print_rows([*headers, "Why Waiting"], rows, as_csv=as_csv)


app.command("ls", hidden=True)(list_jobs)


@app.command("update")
def update(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Argument(help="Job ID (the ID column of `det job list`).")],
    priority: Annotated[
        int | None,
        typer.Option(
            "-p", "--priority", help="New priority, 1-99 (priority scheduler).", show_default=False
        ),
    ] = None,
    weight: Annotated[
        float | None,
        typer.Option(
            "-w", "--weight", help="New weight, > 0 (fair-share scheduler).", show_default=False
        ),
    ] = None,
    resource_pool: Annotated[
        str | None,
        typer.Option("--resource-pool", help="Move the job to this pool.", show_default=False),
    ] = None,
    ahead_of: Annotated[
        str | None,
        typer.Option("--ahead-of", help="Put the job just ahead of this job.", show_default=False),
    ] = None,
    behind_of: Annotated[
        str | None,
        typer.Option("--behind-of", help="Put the job just behind this job.", show_default=False),
    ] = None,
) -> None:
    """Change a job's priority, weight, pool or place in the queue (POST /api/v1/job-queues)."""
    if ahead_of is not None and behind_of is not None:
        raise UsageMistake("--ahead-of and --behind-of cannot be used together", ctx=ctx)
    change: dict[str, Any] = {
        key: value
        for key, value in (
            ("priority", priority),
            ("weight", weight),
            ("resourcePool", resource_pool),
            ("aheadOf", ahead_of),
            ("behindOf", behind_of),
        )
        if value is not None
    }
    if not change:
        raise UsageMistake(
            "nothing to change: give --priority, --weight, --resource-pool, --ahead-of or "
            "--behind-of",
            ctx=ctx,
        )
    open_session(ctx).client.post(UPDATE_PATH, {"updates": [{"jobId": job_id, **change}]})
    echo(f"Updated job {job_id}: {_describe_change(change)}")


def _describe_change(change: dict[str, Any]) -> str:
    parts = []
    for key, label in (("priority", "priority"), ("weight", "weight"), ("resourcePool", "pool")):
        if key in change:
            parts.append(f"{label} {format_number(change[key])}")
    if "aheadOf" in change:
        parts.append(f"ahead of {change['aheadOf']}")
    if "behindOf" in change:
        parts.append(f"behind {change['behindOf']}")
    return ", ".join(parts)
