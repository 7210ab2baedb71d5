"""`det preview-search CONFIG`: what the config's hyperparameter search would run, from the
master (POST /api/v1/preview-hp-search), printed as the real client prints it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.errors import CliError
from cli.render import echo, print_table, to_yaml
from cli.session import open_session
from cli.yaml_config import load_mapping


def describe(unit: dict[str, Any]) -> str:
    if unit.get("maxLength"):
        return "train to completion"
    return f"train for {unit.get('value')} {unit.get('name')}"


def preview_search(
    ctx: typer.Context,
    config_file: Annotated[Path, typer.Argument(help="Experiment config (YAML).")],
) -> None:
    """Preview the trials a hyperparameter search would run."""
    _, config = load_mapping(config_file, "experiment config")
    if "searcher" not in config:
        raise CliError("Missing 'searcher' config section in experiment config.")
    client = open_session(ctx).client
    summary = client.post("/api/v1/preview-hp-search", {"config": config})["summary"]
    shown = {k: v for k, v in (summary.get("config") or {}).items() if v is not None}
    echo("Using search configuration:")
    echo(to_yaml(shown), end="")
    rows = [(t["count"], describe(t["unit"])) for t in summary.get("trials") or []]
    print_table(["Trials", "Training Time"], rows)
