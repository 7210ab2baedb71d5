"""`det checkpoint`: inspect checkpoints by UUID."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.client import path_quote
from cli.errors import CliError
from cli.options import JsonOption
from cli.render import echo, format_bytes, format_time, print_json, print_record, strip_state
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)


def _total_size(resources: Any) -> str:
    if not isinstance(resources, dict):
        return ""
    sizes = []
    for value in resources.values():
        try:
            sizes.append(int(value))
        except (TypeError, ValueError):
            continue
    return f"{len(resources)} files, {format_bytes(sum(sizes))}"


@app.command("describe")
def describe(
    ctx: typer.Context,
    uuid: Annotated[str, typer.Argument(help="Checkpoint UUID.")],
    as_json: JsonOption = False,
) -> None:
    """Show one checkpoint (GET /api/v1/checkpoints/{uuid})."""
    reply = open_session(ctx).client.get(f"/api/v1/checkpoints/{path_quote(uuid)}")
    if as_json:
        print_json(reply)
        return
    ckpt = reply.get("checkpoint") or {}
    training = ckpt.get("training") or {}
    metadata = ckpt.get("metadata") or {}
    print_record(
        [
            ("UUID", ckpt.get("uuid")),
            ("State", strip_state(ckpt.get("state"))),
            ("Experiment ID", training.get("experimentId")),
            ("Trial ID", training.get("trialId")),
            ("Batches", metadata.get("steps_completed")),
            ("Report Time", format_time(ckpt.get("reportTime"))),
            ("Searcher Metric", training.get("searcherMetric")),
            ("Validation Metrics", _avg(training.get("validationMetrics"))),
            ("Resources", _total_size(ckpt.get("resources"))),
            ("Protected", "yes" if ckpt.get("protected") else "no"),
            *_deletion_rows(ckpt.get("deletion")),
            ("Metadata", metadata),
        ],
        title=f"Checkpoint {uuid}",
    )


def _avg(metrics: Any) -> Any:
    if isinstance(metrics, dict):
        return metrics.get("avgMetrics") or None
    return None


def _deletion_rows(deletion: Any) -> list[tuple[str, Any]]:
    if not isinstance(deletion, dict):
        return []
    rows: list[tuple[str, Any]] = [
        ("Deletion Requested", format_time(deletion.get("requestedTime")))
    ]
    if deletion.get("deletedTime"):
        rows.append(("Deleted", format_time(deletion.get("deletedTime"))))
    if deletion.get("error"):
        rows.append(("Deletion Error", deletion.get("error")))
        rows.append(("Attempts", deletion.get("attempts")))
        rows.append(("Next Attempt", format_time(deletion.get("retryTime"))))
    return rows


def _uuids(values: list[str]) -> list[str]:
    # Determined's `det checkpoint delete` takes one comma-separated argument; we take that and
    # several arguments alike.
    out = [part.strip() for value in values for part in value.split(",") if part.strip()]
    if not out:
        raise CliError("name at least one checkpoint UUID")
    return out


@app.command("delete")
def delete(
    ctx: typer.Context,
    checkpoints_uuids: Annotated[
        list[str], typer.Argument(help="Checkpoint UUIDs (comma-separated or several).")
    ],
    yes: Annotated[
        bool, typer.Option("--yes", help="Automatically answer yes to prompts.")
    ] = False,
) -> None:
    """Delete checkpoints from their storage (DELETE /api/v1/checkpoints)."""
    uuids = _uuids(checkpoints_uuids)
    if not yes and not typer.confirm(
        "Deleting checkpoints will result in deletion of all data associated\n"
        "with each checkpoint in the checkpoint storage. Do you still want to proceed?"
    ):
        echo("Stopping deletion of checkpoints.")
        return
    open_session(ctx).client.call(
        "DELETE", "/api/v1/checkpoints", json_body={"checkpointUuids": uuids}
    )
    echo(f"Deletion of checkpoints {','.join(uuids)} is in progress")


@app.command("rm")
def remove_files(
    ctx: typer.Context,
    checkpoints_uuids: Annotated[
        list[str], typer.Argument(help="Checkpoint UUIDs (comma-separated or several).")
    ],
    glob: Annotated[
        list[str] | None,
        typer.Option(
            "--glob",
            help="Files to delete (repeatable); none: only re-read the checkpoints' resources "
            "from storage.",
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Automatically answer yes to prompts.")] = (
        False
    ),
) -> None:
    """Remove files from checkpoints (POST /api/v1/checkpoints/rm), as det does."""
    uuids = _uuids(checkpoints_uuids)
    globs = list(glob or [])
    if (
        globs
        and not yes
        and not typer.confirm(
            "All files matching specified globs will be deleted in all checkpoints provided\n"
            "in checkpoint storage. Do you still want to proceed?"
        )
    ):
        echo("Stopping removal of files from checkpoints.")
        return
    open_session(ctx).client.post(
        "/api/v1/checkpoints/rm", {"checkpointUuids": uuids, "checkpointGlobs": globs}
    )
    joined = ",".join(uuids)
    if globs:
        echo(f"Removal of files from checkpoints {joined} is in progress.")
    else:
        echo(
            f"No glob patterns provided, refreshing resources of checkpoints {joined} is in "
            "progress."
        )


def _protect(ctx: typer.Context, uuid: str, protected: bool) -> None:
    open_session(ctx).client.call(
        "PUT",
        f"/api/v1/checkpoints/{path_quote(uuid)}/protection",
        json_body={"protected": protected},
    )
    echo(
        f"Checkpoint {uuid} is {'protected from' if protected else 'no longer protected from'}"
        " garbage collection and deletion"
    )


@app.command("protect")
def protect(
    ctx: typer.Context, uuid: Annotated[str, typer.Argument(help="Checkpoint UUID.")]
) -> None:
    """Keep a checkpoint whatever the GC policy says (refuses `det checkpoint delete`)."""
    _protect(ctx, uuid, True)


@app.command("unprotect")
def unprotect(
    ctx: typer.Context, uuid: Annotated[str, typer.Argument(help="Checkpoint UUID.")]
) -> None:
    """Let GC and `det checkpoint delete` remove a checkpoint again."""
    _protect(ctx, uuid, False)
