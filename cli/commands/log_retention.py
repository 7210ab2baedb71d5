"""`det experiment|trial set log-retention ID --days N | --forever`: how long the master keeps
a trial's logs after it ends (Determined's commands, flags and range)."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.errors import CliError
from cli.session import open_session

Days = Annotated[
    int | None,
    typer.Option("--days", help="Days to keep the logs after the task ends (-1 to 32767)."),
]
Forever = Annotated[bool, typer.Option("--forever", help="Keep the logs forever.")]


def num_days(days: int | None, forever: bool) -> int:
    if forever and days is not None:
        raise CliError("give --days or --forever, not both")
    if forever:
        return -1
    if days is None:
        raise CliError(
            "Please provide an argument to set log retention: --days N keeps the logs N days "
            "from the end time of the task, --forever keeps them indefinitely."
        )
    if days < -1 or days > 32767:
        raise CliError(
            "Please provide a valid value for --days. The allowed range is between -1 and "
            "32767 days."
        )
    return days


def experiment_log_retention(
    ctx: typer.Context,
    experiment_id: Annotated[int, typer.Argument(help="Experiment ID.")],
    days: Days = None,
    forever: Forever = False,
) -> None:
    """Set how long the logs of an experiment's trials are kept."""
    n = num_days(days, forever)
    open_session(ctx).client.call(
        "PUT",
        f"/api/v1/experiments/{experiment_id}/retain_logs",
        json_body={"experimentId": experiment_id, "numDays": n},
    )
    typer.echo(f"Logs of experiment {experiment_id} are kept {_how(n)}.")


def trial_log_retention(
    ctx: typer.Context,
    trial_id: Annotated[int, typer.Argument(help="Trial ID.")],
    days: Days = None,
    forever: Forever = False,
) -> None:
    """Set how long a trial's logs are kept."""
    n = num_days(days, forever)
    open_session(ctx).client.call(
        "PUT",
        f"/api/v1/trials/{trial_id}/retain_logs",
        json_body={"trialId": trial_id, "numDays": n},
    )
    typer.echo(f"Logs of trial {trial_id} are kept {_how(n)}.")


def _how(days: int) -> str:
    return "forever" if days < 0 else f"{days} days after it ends"
