"""`det checkpoint`: inspect checkpoints by UUID."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.client import path_quote
from cli.options import JsonOption
from cli.render import format_bytes, format_time, print_json, print_record, strip_state
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
            ("Metadata", metadata),
        ],
        title=f"Checkpoint {uuid}",
    )


def _avg(metrics: Any) -> Any:
    if isinstance(metrics, dict):
        return metrics.get("avgMetrics") or None
    return None
