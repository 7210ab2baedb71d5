"""`det experiment gc` (ours) and `det experiment set gc-policy` (Determined's): an
experiment's checkpoint garbage collection, previewed or applied."""

from __future__ import annotations

import pprint
from typing import Annotated

import typer

from cli.options import JsonOption
from cli.render import echo, print_json, print_table
from cli.session import open_session

ExpIdArg = Annotated[int, typer.Argument(help="Experiment ID.", min=1)]


def gc(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be deleted; change nothing.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Collect an ended experiment's checkpoints by its save_* policy (--dry-run: show only)."""
    client = open_session(ctx).client
    path = f"/api/v1/experiments/{experiment_id}/checkpoint_gc"
    plan = client.get(path) if dry_run else client.post(path)
    if as_json:
        print_json(plan)
        return
    rows = [
        (
            "delete" if entry in plan.get("delete", []) else "keep",
            entry.get("trialId"),
            entry.get("stepsCompleted"),
            entry.get("searcherMetric"),
            entry.get("uuid"),
            ", ".join(entry.get("keepReasons") or []),
        )
        for entry in [*plan.get("delete", []), *plan.get("keep", [])]
    ]
    print_table(["Action", "Trial ID", "Batches", "Searcher Metric", "UUID", "Kept Because"], rows)
    count = len(plan.get("delete", []))
    if dry_run:
        echo(f"Dry run: {count} checkpoint(s) of experiment {experiment_id} would be deleted.")
    else:
        echo(f"Deleting {count} checkpoint(s) of experiment {experiment_id} in the background.")


def set_gc_policy(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    save_experiment_best: Annotated[
        int, typer.Option(..., min=0, help="Number of best checkpoints per experiment to save.")
    ],
    save_trial_best: Annotated[
        int, typer.Option(..., min=0, help="Number of best checkpoints per trial to save.")
    ],
    save_trial_latest: Annotated[
        int, typer.Option(..., min=0, help="Number of latest checkpoints per trial to save.")
    ],
    yes: Annotated[bool, typer.Option("--yes", help="Automatically answer yes to prompts.")] = (
        False
    ),
) -> None:
    """Set the experiment's GC policy and run GC (shows what goes first, as det does)."""
    client = open_session(ctx).client
    policy = {
        "save_experiment_best": save_experiment_best,
        "save_trial_best": save_trial_best,
        "save_trial_latest": save_trial_latest,
    }
    if not yes:
        preview = client.get(f"/api/v1/experiments/{experiment_id}/preview_gc", policy)
        checkpoints = preview.get("checkpoints") or []
        metric = preview.get("metric_name") or ""
        rows = [
            (
                c.get("TrialID"),
                c.get("StepsCompleted"),
                str(c.get("State", "")).removeprefix("STATE_"),
                (c.get("ValidationMetrics") or {}).get(metric),
                c.get("UUID"),
            )
            for c in checkpoints
        ]
        with_validation = sum(1 for c in checkpoints if c.get("step"))
        if rows:
            echo("The following checkpoints will be deleted by applying this GC Policy:")
            print_table(
                ["Trial ID", "# of Batches", "State", f"Validation Metric ({metric})", "UUID"],
                rows,
            )
        echo(
            f"This policy will delete {with_validation} checkpoints with validations and "
            f"{len(checkpoints) - with_validation} checkpoints without validations."
        )
        if not typer.confirm(
            "Changing the checkpoint garbage collection policy of an experiment may result\n"
            "in the unrecoverable deletion of checkpoints.  Do you wish to proceed?"
        ):
            echo("Aborting operations.")
            return
    client.patch(
        f"/api/v1/experiments/{experiment_id}",
        {
            "id": experiment_id,
            "checkpointStorage": {
                "saveExperimentBest": save_experiment_best,
                "saveTrialBest": save_trial_best,
                "saveTrialLatest": save_trial_latest,
            },
        },
    )
    echo(f"Set GC policy of experiment {experiment_id} to\n{pprint.pformat(policy)}")
