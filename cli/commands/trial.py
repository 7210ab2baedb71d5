"""`det trial` (alias `t`): describe a trial and read its logs."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.client import ApiClient
from cli.logs import print_logs, trial_logs_path
from cli.options import FollowOption, JsonOption, TailOption
from cli.render import format_time, print_json, print_record, print_table, strip_state
from cli.session import open_session
from cli.workloads import WORKLOAD_HEADERS, avg_metrics, workload_rows

app = typer.Typer(no_args_is_help=True)

TrialIdArg = Annotated[int, typer.Argument(help="Trial ID.", min=1)]


def fetch_workloads(client: ApiClient, trial_id: int, page_size: int = 1000) -> list[Any]:
    return client.paginate(
        f"/api/v1/trials/{trial_id}/workloads",
        "workloads",
        {"includeBatchMetrics": False},
        page_size=page_size,
    )


@app.command("describe")
def describe(ctx: typer.Context, trial_id: TrialIdArg, as_json: JsonOption = False) -> None:
    """Show a trial and its workloads (training, validation, checkpoint)."""
    client = open_session(ctx).client
    reply = client.get(f"/api/v1/trials/{trial_id}")
    workloads = fetch_workloads(client, trial_id)
    if as_json:
        print_json({**reply, "workloads": workloads})
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
) -> None:
    """Print a trial's logs (GET /api/v1/trials/{id}/logs)."""
    client = open_session(ctx).client
    print_logs(client, trial_logs_path(trial_id), follow=follow, tail=tail, as_json=as_json)


@app.command("kill")
def kill(ctx: typer.Context, trial_id: TrialIdArg) -> None:
    """Kill a trial's running work at once (POST /api/v1/trials/{id}/kill)."""
    open_session(ctx).client.post(f"/api/v1/trials/{trial_id}/kill")
    print(f"Killed trial {trial_id}")
