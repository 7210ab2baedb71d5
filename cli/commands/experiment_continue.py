"""`det experiment continue` and `det experiment fork`: run an ended experiment again, or start a
new one from an experiment's config and code with changes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.commands.experiment_create import build_request, read_context
from cli.render import echo
from cli.session import open_session
from cli.yaml_config import apply_overrides, dump_yaml, load_mapping

ExpIdArg = Annotated[int, typer.Argument(help="Experiment ID.", min=1)]
ConfigFile = Annotated[
    Path | None,
    typer.Option("--config-file", help="Experiment config file (.yaml) with the changes."),
]
ConfigOverride = Annotated[
    list[str] | None,
    typer.Option("--config", help="Override a config key (dotted.key=value); repeatable."),
]


def _changes(config_file: Path | None, overrides: list[str] | None) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if config_file is not None:
        _text, data = load_mapping(config_file, "experiment config")
    return apply_overrides(dict(data), list(overrides or []))


def continue_experiment(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    config_file: ConfigFile = None,
    config: ConfigOverride = None,
) -> None:
    """Resume an ended experiment: a single trial, or the trials that did not complete, go on
    from their latest checkpoints with the config changes (POST /api/v1/experiments/continue)."""
    body = {"id": experiment_id, "overrideConfig": dump_yaml(_changes(config_file, config))}
    open_session(ctx).client.post("/api/v1/experiments/continue", body)
    echo(f"Continued experiment {experiment_id}")


def fork(
    ctx: typer.Context,
    experiment_id: ExpIdArg,
    config_file: ConfigFile = None,
    config: ConfigOverride = None,
    context_dir: Annotated[
        Path | None,
        typer.Option("--context", "-c", help="New code; default: the parent's code."),
    ] = None,
    paused: Annotated[bool, typer.Option("--paused", help="Create it paused.")] = False,
) -> None:
    """Create a new experiment from this one's config (with the changes) and code, recorded as
    its fork (POST /api/v1/experiments with parentId)."""
    client = open_session(ctx).client
    parent = client.get(f"/api/v1/experiments/{experiment_id}")
    base = dict((parent.get("experiment") or {}).get("config") or parent.get("config") or {})
    changes = _changes(config_file, config)
    merged = _merge(base, changes)
    body = build_request(dump_yaml(merged), read_context(context_dir), paused=paused)
    body["parentId"] = experiment_id
    reply = client.post("/api/v1/experiments", body)
    new_id = (reply.get("experiment") or {}).get("id")
    echo(f"Created experiment {new_id} (forked from {experiment_id})")


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`changes` over `base`, mapping by mapping (a list or value replaces)."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out
