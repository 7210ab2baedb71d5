"""`det experiment label add|remove`, `set name|description`, `wait`, `download-model-def`,
`delete` and `delete-tb-files`, as Determined 0.38.1's client has them (same arguments,
messages and exit codes)."""

from __future__ import annotations

import base64
import time
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from cli.client import path_quote
from cli.errors import CliError
from cli.render import echo, strip_state
from cli.session import open_session

label_app = typer.Typer(no_args_is_help=True, help="Manage experiment labels.")

ExpIdArg = Annotated[int, typer.Argument(help="Experiment ID.", min=1)]
LabelArg = Annotated[str, typer.Argument(help="The label.")]


@label_app.command("add")
def add_label(ctx: typer.Context, experiment_id: ExpIdArg, label: LabelArg) -> None:
    """Add a label to an experiment (PUT /api/v1/experiments/{id}/labels/{label})."""
    client = open_session(ctx).client
    client.call("PUT", f"/api/v1/experiments/{experiment_id}/labels/{path_quote(label)}")
    echo(f"Added label '{label}' to experiment {experiment_id}")


@label_app.command("remove")
def remove_label(ctx: typer.Context, experiment_id: ExpIdArg, label: LabelArg) -> None:
    """Remove a label from an experiment (DELETE /api/v1/experiments/{id}/labels/{label})."""
    client = open_session(ctx).client
    client.delete(f"/api/v1/experiments/{experiment_id}/labels/{path_quote(label)}")
    echo(f"Removed label '{label}' from experiment {experiment_id}")


def _patch(ctx: typer.Context, experiment_id: int, field: str, value: str) -> None:
    body = {"id": experiment_id, field: value}
    open_session(ctx).client.patch(f"/api/v1/experiments/{experiment_id}", body)
    echo(f"Set {field} of experiment {experiment_id} to '{value}'")


def set_name(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    name: Annotated[str, typer.Argument(help="The experiment's new name.")],
) -> None:
    """Rename an experiment."""
    _patch(ctx, experiment_id, "name", name)


def set_description(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    description: Annotated[str, typer.Argument(help="The experiment's new description.")],
) -> None:
    """Set an experiment's description."""
    _patch(ctx, experiment_id, "description", description)


class Wait(Enum):
    COMPLETED = "completed"  # ended well: exit 0
    ENDED = "ended"  # ended otherwise (canceled, errored, deleted): exit 1
    PAUSED = "paused"  # it will not end by itself: an error, as Determined's client says
    GOING = "going"  # poll again


_ENDED = {"CANCELED", "ERROR", "DELETED"}


def wait_verdict(wire_state: str | None) -> Wait:
    """What `det experiment wait` does on seeing this state (Determined's Experiment.wait:
    COMPLETED, CANCELED, DELETED and ERROR end the wait, PAUSED is an error, anything else
    — QUEUED, RUNNING, STOPPING_*, DELETING — is waited out)."""
    state = strip_state(wire_state or "")
    if state == "COMPLETED":
        return Wait.COMPLETED
    if state in _ENDED:
        return Wait.ENDED
    if state == "PAUSED":
        return Wait.PAUSED
    return Wait.GOING


def wait(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    polling_interval: Annotated[
        float,
        typer.Option(
            "--polling-interval", min=0.0, help="Seconds between looks at the experiment's state."
        ),
    ] = 5,
) -> None:
    """Wait until the experiment ends; exit 1 unless it COMPLETED."""
    client = open_session(ctx).client
    while True:
        reply = client.get(f"/api/v1/experiments/{experiment_id}")
        state = (reply.get("experiment") or {}).get("state")
        verdict = wait_verdict(state)
        if verdict is Wait.COMPLETED:
            return
        if verdict is Wait.ENDED:
            raise typer.Exit(1)
        if verdict is Wait.PAUSED:
            raise CliError(
                f"Experiment {experiment_id} is in paused state. "
                "Make sure the experiment is active."
            )
        time.sleep(polling_interval)


def download_model_def(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    output_dir: Annotated[
        Path, typer.Option("--output-dir", help="Where to write experiment_<id>_model_def.tgz.")
    ] = Path("."),
) -> None:
    """Save the experiment's context directory as a .tgz, as it was submitted."""
    reply = open_session(ctx).client.get(f"/api/v1/experiments/{experiment_id}/model_def")
    target = output_dir / f"experiment_{experiment_id}_model_def.tgz"
    try:
        target.write_bytes(base64.b64decode(reply.get("b64Tgz") or ""))
    except OSError as exc:
        raise CliError(f"cannot write {target}: {exc.strerror or exc}") from None


_DELETE_WARNING = (
    "Deleting an experiment will result in the unrecoverable \n"
    "deletion of all associated logs, checkpoints, and other \n"
    "metadata associated with the experiment. For a recoverable \n"
    "alternative, see the 'det archive' command. Do you still \n"
    "wish to proceed?"
)


def delete(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete an ended experiment with its checkpoints, logs and metrics (not recoverable)."""
    if not yes and not typer.confirm(_DELETE_WARNING, default=False):
        echo("Aborting experiment deletion.")
        return
    open_session(ctx).client.delete(f"/api/v1/experiments/{experiment_id}")
    echo(f"Deletion of experiment {experiment_id} is in progress")


def delete_tb_files(ctx: typer.Context, experiment_id: ExpIdArg) -> None:
    """Delete the TensorBoard files the experiment's trials wrote to checkpoint storage."""
    open_session(ctx).client.delete(f"/api/v1/experiments/{experiment_id}/tensorboard-files")
    echo(f"Deleted the TensorBoard files of experiment {experiment_id}")
