"""`det job update-batch JOB.OP=VALUE …`, as Determined 0.38.1's client: each operation
(priority, weight, resource-pool) is one POST /api/v1/job-queues update, in the order given."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.errors import CliError
from cli.session import open_session

_FIELDS = {
    "priority": "priority",
    "weight": "weight",
    "resource-pool": "resourcePool",
    "resource_pool": "resourcePool",
}


def parse_operation(operation: str) -> dict[str, Any]:
    """`<jobID>.<operation>=<value>` as one QueueControl, with Determined's messages."""
    # Split at the first dot only (job ids hold none), so that a weight may be 0.5.
    parts = operation.split(".", 1)
    if len(parts) != 2:
        raise CliError(
            f"Job {parts[0]} and its operation have an invalid format. "
            "Please ensure the update is formatted as <jobID>.<operation>=<value>."
        )
    job_id, rest = parts
    operand = rest.split("=")
    if len(operand) != 2:
        raise CliError(
            f"The operation for job {job_id} has invalid format. "
            "Please ensure the operation is formatted as <operation>=<value>."
        )
    name, value = operand
    field = _FIELDS.get(name)
    if field is None:
        raise CliError(
            f"Invalid operation {name} specified for job {job_id}. "
            "Supported commands include: priority, weight, resource-pool."
        )
    if field == "resourcePool":
        return {"jobId": job_id, field: value}
    try:
        # Determined's client sends whole numbers; a fair-share weight may be fractional here.
        number: float = int(value) if field == "priority" else float(value)
    except ValueError:
        raise CliError(f"The {name} of job {job_id} must be a number, not {value!r}.") from None
    return {"jobId": job_id, field: number}


def update_batch(
    ctx: typer.Context,
    operations: Annotated[
        list[str],
        typer.Argument(
            help="<jobID>.<operation>=<value>; operations: priority, weight, resource-pool.",
            show_default=False,
        ),
    ],
) -> None:
    """Change several jobs at once (all checked before any is sent)."""
    updates = [parse_operation(op) for op in operations]
    client = open_session(ctx).client
    for update in updates:
        client.post("/api/v1/job-queues", {"updates": [update]})
