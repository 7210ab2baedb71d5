"""`det experiment` (alias `e`): list, inspect and control experiments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from cli.client import ApiClient
from cli.commands.experiment_continue import continue_experiment, fork
from cli.commands.experiment_create import create
from cli.commands.experiment_gc import gc, set_gc_policy
from cli.commands.experiment_meta import (
    delete,
    delete_tb_files,
    download_model_def,
    label_app,
    set_description,
    set_name,
    wait,
)
from cli.commands.log_retention import experiment_log_retention
from cli.commands.resources import cost_cell, fetch_cost
from cli.commands.trial import fetch_workloads
from cli.errors import CliError
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
from cli.logs import print_log_entries, trial_log_entries
from cli.options import CsvOption, FollowOption, JsonOption, TailOption
from cli.pages import LimitOption, OffsetOption, PagesOption, fetch_pages
from cli.render import (
    cell,
    echo,
    format_bytes,
    format_time,
    print_json,
    print_record,
    print_rows,
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
app.command("continue")(continue_experiment)
app.command("fork")(fork)
app.command("gc")(gc)
set_app.command("gc-policy")(set_gc_policy)
set_app.command("log-retention")(experiment_log_retention)
set_app.command("name")(set_name)
set_app.command("description")(set_description)
app.add_typer(label_app, name="label")
app.command("wait")(wait)
app.command("download-model-def")(download_model_def)
app.command("delete")(delete)
app.command("delete-tb-files")(delete_tb_files)

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
    limit: LimitOption = None,
    offset: OffsetOption = 0,
    pages: PagesOption = None,
    show_project: Annotated[
        bool, typer.Option("--show_project", help="Add the workspace and project columns.")
    ] = False,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
) -> None:
    """List your unarchived experiments (GET /api/v1/experiments)."""
    session = open_session(ctx)
    params: dict[str, Any] = {} if show_all else {"archived": False, "users": [session.username]}
    experiments = fetch_pages(
        session.client,
        "/api/v1/experiments",
        "experiments",
        params,
        limit=limit,
        offset=offset,
        pages=pages,
    )
    if as_json:
        print_json({"experiments": experiments})
        return
    rows = [
        (
            *((e.get("workspaceName"), e.get("projectName")) if show_project else ()),
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
    headers = [*(["Workspace", "Project"] if show_project else []), *headers, "Resource Pool"]
    print_rows(headers, rows, as_csv=as_csv)


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
    cost = fetch_cost(client, f"/api/v1/experiments/{experiment_id}/cost")
    if as_json:
        # Each trial as GET /api/v1/trials/{id} gives it (hparams, state, steps, best validation).
        trials = fetch_trials(client, experiment_id)
        print_json({**reply, "trials": trials, **({"cost": cost} if cost else {})})
        return
    exp = reply.get("experiment") or {}
    record = _experiment_record(exp)
    if cost is not None:
        record.append(("Cost", cost_cell(cost.get("total"))))
    print_record(record, title=f"Experiment {experiment_id}")
    trial_costs = (cost or {}).get("byTrial") or {}
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
                *([cost_cell(trial_costs.get(str(trial.get("id"))))] if cost is not None else []),
            )
        )
    headers = ["Trial ID", "State", "H-Params", "Batches", "Best Validation", "Checkpoint"]
    headers += ["Start Time", "End Time", *(["Cost"] if cost is not None else [])]
    print_table(headers, rows, title="Trials")


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
    """Print the logs of the experiment's first trial."""
    client = open_session(ctx).client
    trials = fetch_trials(client, experiment_id)
    if not trials:
        raise CliError(f"experiment {experiment_id} has no trials yet")
    first = min(int(t["id"]) for t in trials)
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
    if head and (tail or follow):
        raise CliError("--head cannot be combined with --tail or --follow")
    entries = trial_log_entries(client, first, follow=follow, tail=tail, head=head, filters=filters)
    print_log_entries(entries, as_json=as_json)


@app.command("list-trials")
def list_trials(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
    limit: LimitOption = None,
    offset: OffsetOption = 0,
    pages: PagesOption = None,
) -> None:
    """List an experiment's trials."""
    path = f"/api/v1/experiments/{experiment_id}/trials"
    client = open_session(ctx).client
    trials = fetch_pages(client, path, "trials", limit=limit, offset=offset, pages=pages)
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
    print_rows(headers, rows, as_csv=as_csv)


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
    as_csv: CsvOption = False,
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
    print_rows([*headers, "Report Time"], rows, as_csv=as_csv)
