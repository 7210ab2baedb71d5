"""`det experiment` (alias `e`): list, inspect and control experiments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from cli.client import ApiClient
from cli.commands.experiment_create import create
from cli.commands.experiment_gc import gc, set_gc_policy
from cli.commands.trial import fetch_workloads
from cli.errors import CliError
from cli.logs import print_log_entries, trial_log_entries
from cli.options import FollowOption, JsonOption, TailOption
from cli.render import (
    cell,
    echo,
    format_bytes,
    format_time,
    print_json,
    print_record,
    print_table,
    print_yaml,
    strip_state,
)
from cli.session import open_session
from cli.workloads import best_validation, latest_checkpoint, searcher_metric

app = typer.Typer(no_args_is_help=True)
set_app = typer.Typer(no_args_is_help=True, help="Change an experiment's scheduling settings.")
app.add_typer(set_app, name="set")
app.command("create")(create)
app.command("gc")(gc)
set_app.command("gc-policy")(set_gc_policy)

ExpIdArg = Annotated[int, typer.Argument(help="Experiment ID.", min=1)]


def _progress(value: Any) -> str:
    try:
        return f"{float(value) * 100:.1f}%"
    except (TypeError, ValueError):
        return ""


@app.command("list")
def list_experiments(
    ctx: typer.Context,
    show_all: Annotated[
        bool, typer.Option("--all", "-a", help="Include archived and other users' experiments.")
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="Fetch one page of at most N.", show_default=False),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List your unarchived experiments (GET /api/v1/experiments)."""
    session = open_session(ctx)
    params: dict[str, Any] = {} if show_all else {"archived": False, "users": [session.username]}
    path = "/api/v1/experiments"
    if limit:
        experiments = session.client.get(path, {**params, "limit": limit, "offset": 0}).get(
            "experiments"
        )
    else:
        experiments = session.client.paginate(path, "experiments", params, page_size=200)
    experiments = experiments or []
    if as_json:
        print_json({"experiments": experiments})
        return
    rows = [
        (
            e.get("id"),
            e.get("username"),
            e.get("name"),
            e.get("forkedFrom"),
            strip_state(e.get("state")),
            _progress(e.get("progress")),
            format_time(e.get("startTime")),
            format_time(e.get("endTime")),
            e.get("resourcePool"),
        )
        for e in experiments
    ]
    headers = ["ID", "Owner", "Name", "Parent ID", "State", "Progress", "Start Time", "End Time"]
    print_table([*headers, "Resource Pool"], rows)


def fetch_trials(client: ApiClient, experiment_id: int) -> list[dict[str, Any]]:
    return client.paginate(f"/api/v1/experiments/{experiment_id}/trials", "trials")


def _experiment_record(exp: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        ("ID", exp.get("id")),
        ("Name", exp.get("name")),
        ("State", strip_state(exp.get("state"))),
        ("Progress", _progress(exp.get("progress"))),
        ("Owner", exp.get("username")),
        ("Project ID", exp.get("projectId")),
        ("Searcher", exp.get("searcherType")),
        ("Trials", exp.get("numTrials")),
        ("Start Time", format_time(exp.get("startTime"))),
        ("End Time", format_time(exp.get("endTime"))),
        ("Archived", exp.get("archived")),
        ("Resource Pool", exp.get("resourcePool")),
        ("Description", exp.get("description")),
        ("Labels", exp.get("labels")),
    ]


@app.command("describe")
def describe(ctx: typer.Context, experiment_id: ExpIdArg, as_json: JsonOption = False) -> None:
    """Show an experiment and a table of its trials with their best validation metric."""
    client = open_session(ctx).client
    reply = client.get(f"/api/v1/experiments/{experiment_id}")
    if as_json:
        print_json(reply)
        return
    exp = reply.get("experiment") or {}
    print_record(_experiment_record(exp), title=f"Experiment {experiment_id}")
    metric, smaller = searcher_metric(exp.get("config") or reply.get("config"))
    rows = []
    for trial in fetch_trials(client, experiment_id):
        workloads = fetch_workloads(client, trial["id"], page_size=500)
        best = best_validation(workloads, metric, smaller)
        rows.append(
            (
                trial.get("id"),
                strip_state(trial.get("state")),
                trial.get("hparams"),
                trial.get("totalBatchesProcessed"),
                f"{metric}={cell(best)}" if best is not None else "",
                latest_checkpoint(workloads),
                format_time(trial.get("startTime")),
                format_time(trial.get("endTime")),
            )
        )
    headers = ["Trial ID", "State", "H-Params", "Batches", "Best Validation", "Checkpoint"]
    print_table([*headers, "Start Time", "End Time"], rows, title="Trials")


@app.command("config")
def config(ctx: typer.Context, experiment_id: ExpIdArg, as_json: JsonOption = False) -> None:
    """Print an experiment's (expanded) configuration as YAML."""
    reply = open_session(ctx).client.get(f"/api/v1/experiments/{experiment_id}")
    conf = (reply.get("experiment") or {}).get("config") or reply.get("config") or {}
    if as_json:
        print_json(conf)
    else:
        print_yaml(conf)


def _action(verb: str, past: str, doc: str) -> Callable[..., None]:
    def command(ctx: typer.Context, experiment_id: ExpIdArg) -> None:
        open_session(ctx).client.post(f"/api/v1/experiments/{experiment_id}/{verb}")
        echo(f"{past} experiment {experiment_id}")

    command.__doc__ = doc
    command.__name__ = verb
    return command


for _verb, _past, _doc in (
    ("pause", "Paused", "Pause an active experiment."),
    ("activate", "Activated", "Resume a paused experiment."),
    ("kill", "Killed", "Stop an experiment now, without a final checkpoint."),
    ("cancel", "Canceled", "Stop an experiment after its trials checkpoint."),
    ("archive", "Archived", "Hide a finished experiment from default listings."),
    ("unarchive", "Unarchived", "Show an archived experiment again."),
):
    app.command(_verb)(_action(_verb, _past, _doc))


def _patch_resources(ctx: typer.Context, experiment_id: int, resources: dict[str, Any]) -> None:
    body = {"id": experiment_id, "resources": resources}
    open_session(ctx).client.patch(f"/api/v1/experiments/{experiment_id}", body)
    ((key, value),) = resources.items()
    echo(f"Set {key} of experiment {experiment_id} to {value}")


@set_app.command("priority")
def set_priority(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    priority: Annotated[int, typer.Argument(help="Priority (lower runs first).", min=1, max=99)],
) -> None:
    """Set the scheduling priority."""
    _patch_resources(ctx, experiment_id, {"priority": priority})


@set_app.command("weight")
def set_weight(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    weight: Annotated[float, typer.Argument(help="Fair-share weight.", min=0.0)],
) -> None:
    """Set the fair-share weight."""
    _patch_resources(ctx, experiment_id, {"weight": weight})


@set_app.command("max-slots")
def set_max_slots(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    max_slots: Annotated[int, typer.Argument(help="Most slots the experiment may use.", min=0)],
) -> None:
    """Cap the number of slots the experiment may use."""
    _patch_resources(ctx, experiment_id, {"maxSlots": max_slots})


@app.command("logs")
def logs(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    follow: FollowOption = False,
    tail: TailOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the logs of the experiment's first trial."""
    client = open_session(ctx).client
    trials = fetch_trials(client, experiment_id)
    if not trials:
        raise CliError(f"experiment {experiment_id} has no trials yet")
    first = min(int(t["id"]) for t in trials)
    print_log_entries(trial_log_entries(client, first, follow=follow, tail=tail), as_json=as_json)


@app.command("list-trials")
def list_trials(ctx: typer.Context, experiment_id: ExpIdArg, as_json: JsonOption = False) -> None:
    """List an experiment's trials."""
    trials = fetch_trials(open_session(ctx).client, experiment_id)
    if as_json:
        print_json({"trials": trials})
        return
    rows = [
        (
            t.get("id"),
            strip_state(t.get("state")),
            t.get("hparams"),
            t.get("totalBatchesProcessed"),
            t.get("restarts"),
            format_time(t.get("startTime")),
            format_time(t.get("endTime")),
        )
        for t in trials
    ]
    headers = ["Trial ID", "State", "H-Params", "Batches", "Restarts", "Start Time", "End Time"]
    print_table(headers, rows)


def _resources_size(resources: Any) -> str:
    if not isinstance(resources, dict):
        return ""
    total = 0
    for size in resources.values():
        try:
            total += int(size)
        except (TypeError, ValueError):
            continue
    return f"{len(resources)} files, {format_bytes(total)}"


@app.command("list-checkpoints")
def list_checkpoints(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    best: Annotated[
        int | None,
        typer.Option(
            "--best", min=0, help="Only the N best by the searcher metric (best first), as det."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List an experiment's checkpoints, oldest first (or the --best N, best first)."""
    client = open_session(ctx).client
    path = f"/api/v1/experiments/{experiment_id}/checkpoints"
    if best:
        reply = client.get(path, {"sortByAttr": "SORT_BY_SEARCHER_METRIC", "limit": best})
        checkpoints = reply.get("checkpoints") or []
    else:
        checkpoints = client.paginate(path, "checkpoints", {"sortByAttr": "SORT_BY_END_TIME"})
    if as_json:
        print_json({"checkpoints": checkpoints})
        return
    rows = []
    for ckpt in checkpoints:
        training = ckpt.get("training") or {}
        rows.append(
            (
                training.get("trialId"),
                (ckpt.get("metadata") or {}).get("steps_completed"),
                strip_state(ckpt.get("state")),
                training.get("searcherMetric"),
                ckpt.get("uuid"),
                _resources_size(ckpt.get("resources")),
                format_time(ckpt.get("reportTime")),
            )
        )
    headers = ["Trial ID", "Batches", "State", "Searcher Metric", "UUID", "Resources"]
    print_table([*headers, "Report Time"], rows)
