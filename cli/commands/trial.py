"""`det trial` (alias `t`): describe a trial and read its logs."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.client import ApiClient
from cli.commands.log_retention import trial_log_retention
from cli.commands.resources import cost_cell, fetch_cost
from cli.log_filters import (
    AfterOption,
    AgentIdOption,
    BeforeOption,
    ContainerIdOption,
    HeadOption,
    LevelOption,
    RankIdOption,
    SourceOption,
    StdtypeOption,
    filter_params,
)
from cli.logs import print_logs, trial_logs_path
from cli.options import FollowOption, JsonOption, TailOption
from cli.pages import LimitOption, OffsetOption, PagesOption, fetch_pages
from cli.profiler_summary import PROFILER_HEADERS, profiler_rows
from cli.render import format_time, print_csv, print_json, print_record, print_table, strip_state
from cli.session import open_session
from cli.workloads import WORKLOAD_HEADERS, avg_metrics, workload_rows

app = typer.Typer(no_args_is_help=True)
set_app = typer.Typer(no_args_is_help=True, help="Set trial attributes.")
app.add_typer(set_app, name="set")
set_app.command("log-retention")(trial_log_retention)

TrialIdArg = Annotated[int, typer.Argument(help="Trial ID.", min=1)]


def fetch_workloads(client: ApiClient, trial_id: int, page_size: int = 1000) -> list[Any]:
    return client.paginate(
        f"/api/v1/trials/{trial_id}/workloads",
        "workloads",
        {"includeBatchMetrics": False},
        page_size=page_size,
    )


@app.command("describe")
def describe(
    ctx: typer.Context,
    trial_id: TrialIdArg,
    as_json: JsonOption = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Only the workloads, as CSV.")] = False,
    limit: LimitOption = None,
    offset: OffsetOption = 0,
    pages: PagesOption = None,
) -> None:
    """Show a trial and its workloads (training, validation, checkpoint)."""
    client = open_session(ctx).client
    reply = client.get(f"/api/v1/trials/{trial_id}")
    if limit is None and pages is None and not offset:
        workloads = fetch_workloads(client, trial_id)
    else:
        path = f"/api/v1/trials/{trial_id}/workloads"
        params = {"includeBatchMetrics": False}
        workloads = fetch_pages(
            client, path, "workloads", params, limit=limit, offset=offset, pages=pages
        )
    if as_csv:
        # Determined's --csv prints the workloads table alone, machine-readable.
        print_csv(WORKLOAD_HEADERS, workload_rows(workloads))
        return
    cost = fetch_cost(client, f"/api/v1/trials/{trial_id}/cost")
    if as_json:
        print_json({**reply, "workloads": workloads, **({"cost": cost} if cost else {})})
        return
    trial = reply.get("trial") or {}
    best = trial.get("bestValidation") or {}
    print_record(
        [
            ("Trial ID", trial.get("id")),
            ("Experiment ID", trial.get("experimentId")),
            ("State", strip_state(trial.get("state"))),
            ("H-Params", trial.get("hparams")),
            ("Batches", trial.get("totalBatchesProcessed")),
            ("Restarts", trial.get("restarts")),
            ("Start Time", format_time(trial.get("startTime"))),
            ("End Time", format_time(trial.get("endTime"))),
            ("Best Validation", avg_metrics(best) or None),
            ("Latest Validation", avg_metrics(trial.get("latestValidation") or {}) or None),
            ("Searcher Metric", trial.get("searcherMetricValue")),
            *([("Cost", cost_cell(cost.get("total")))] if cost is not None else []),
        ],
        title=f"Trial {trial_id}",
    )
    print_table(WORKLOAD_HEADERS, workload_rows(workloads), title="Workloads")


@app.command("logs")
def logs(
    ctx: typer.Context,
    trial_id: TrialIdArg,
    follow: FollowOption = False,
    tail: TailOption = None,
    as_json: JsonOption = False,
    head: HeadOption = None,
    agent_ids: AgentIdOption = None,
    container_ids: ContainerIdOption = None,
    rank_ids: RankIdOption = None,
    timestamp_before: BeforeOption = None,
    timestamp_after: AfterOption = None,
    level: LevelOption = None,
    sources: SourceOption = None,
    stdtypes: StdtypeOption = None,
) -> None:
    """Print a trial's logs (GET /api/v1/trials/{id}/logs)."""
    client = open_session(ctx).client
    filters = filter_params(
        agent_ids=agent_ids,
        container_ids=container_ids,
        rank_ids=rank_ids,
        sources=sources,
        stdtypes=stdtypes,
        level=level,
        timestamp_before=timestamp_before,
        timestamp_after=timestamp_after,
    )
    path = trial_logs_path(trial_id)
    print_logs(client, path, follow=follow, tail=tail, as_json=as_json, head=head, filters=filters)


@app.command("profiler")
def profiler(ctx: typer.Context, trial_id: TrialIdArg, as_json: JsonOption = False) -> None:
    """Summarise the system metrics the trial's profiler sampled (`profiling.enabled`)."""
    client = open_session(ctx).client
    batches = list(client.stream(f"/api/v1/trials/{trial_id}/profiler/metrics"))
    if as_json:
        print_json(batches)
        return
    rows = profiler_rows(batches)
    if not rows:
        print(f"Trial {trial_id} has no system metrics (profiling.enabled: true samples them)")
        return
    print_table(PROFILER_HEADERS, rows, title=f"Trial {trial_id} system metrics")


@app.command("kill")
def kill(ctx: typer.Context, trial_id: TrialIdArg) -> None:
    """Kill a trial's running work at once (POST /api/v1/trials/{id}/kill)."""
    open_session(ctx).client.post(f"/api/v1/trials/{trial_id}/kill")
    print(f"Killed trial {trial_id}")
