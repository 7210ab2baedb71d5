"""`det experiment create`: submit a config plus context directory, optionally follow it."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from cli import port_tunnel
from cli.client import ApiClient
from cli.context import MiB, check_size, pack_entries, scan_context
from cli.errors import CliError
from cli.logs import print_log_entries, trial_log_entries
from cli.render import byte_progress, echo, print_warning, strip_state
from cli.session import global_options, open_session
from cli.yaml_config import apply_overrides, dump_yaml, load_mapping

PROGRESS_MIN_BYTES = 8 * MiB
POLL_INTERVAL_S = 0.2
FINAL_STATE_WAIT_S = 10.0
TERMINAL_STATES = frozenset(
    {"STATE_COMPLETED", "STATE_CANCELED", "STATE_ERROR", "STATE_DELETED", "STATE_DELETE_FAILED"}
)


def build_request(
    config_text: str,
    files: list[dict[str, Any]],
    *,
    paused: bool = False,
    project_id: int | None = None,
    template: str | None = None,
) -> dict[str, Any]:
    """The POST /api/v1/experiments body; `config` stays YAML *text*, as on the wire."""
    return {
        "activate": not paused,
        "config": config_text,
        "modelDefinition": files,
        "parentId": None,
        "projectId": project_id,
        "template": template,
        "validateOnly": False,
    }


def read_config(path: Path, overrides: list[str]) -> str:
    """Raw YAML text, re-dumped only when `--config` overrides change it."""
    text, parsed = load_mapping(path, "experiment config")
    if not overrides:
        return text
    return dump_yaml(apply_overrides(parsed, overrides))


def read_context(context_dir: Path | None) -> list[dict[str, Any]]:
    if context_dir is None:
        return []
    entries = scan_context(context_dir)
    total = check_size(entries, context_dir)
    with byte_progress("Reading context", total, min_bytes=PROGRESS_MIN_BYTES) as advance:
        return pack_entries(entries, advance)


def _experiment_state(client: ApiClient, experiment_id: int) -> str:
    reply = client.get(f"/api/v1/experiments/{experiment_id}")
    return str((reply.get("experiment") or {}).get("state") or "")


def follow_experiment(
    client: ApiClient,
    experiment_id: int,
    *,
    sleep: Callable[[float], None] = time.sleep,
    poll_s: float = POLL_INTERVAL_S,
) -> str:
    """Wait for the first trial, stream its logs to the end, return the experiment's state."""
    polls = 0
    while True:
        trials = client.get(f"/api/v1/experiments/{experiment_id}/trials").get("trials") or []
        if trials:
            break
        polls += 1
        if polls % 10 == 0:
            state = _experiment_state(client, experiment_id)
            if state in TERMINAL_STATES:
                return state
        sleep(poll_s)
    first = min(int(t["id"]) for t in trials)
    print_log_entries(trial_log_entries(client, first, follow=True))
    state = _experiment_state(client, experiment_id)
    waited = 0.0
    while state not in TERMINAL_STATES and waited < FINAL_STATE_WAIT_S:
        sleep(poll_s)
        waited += poll_s
        state = _experiment_state(client, experiment_id)
    return state


def first_trial_task(client: ApiClient, experiment_id: int, sleep: Any) -> str:
    """The task id of the experiment's first trial, once it has one (as Determined's
    `--publish` waits for it)."""
    while True:
        trials = client.get(f"/api/v1/experiments/{experiment_id}/trials").get("trials") or []
        with_task = [t for t in trials if t.get("taskId")]
        if with_task:
            return str(min(with_task, key=lambda t: int(t["id"]))["taskId"])
        if trials and all(t.get("state") in TERMINAL_STATES for t in trials):
            raise CliError(f"experiment {experiment_id}'s trials ended: nothing to publish")
        sleep(POLL_INTERVAL_S)


def create(
    ctx: typer.Context,
    config_file: Annotated[Path, typer.Argument(help="Experiment config (YAML).")],
    context_dir: Annotated[
        Path | None,
        typer.Argument(help="Model-definition directory to upload.", show_default=False),
    ] = None,
    template: Annotated[
        str | None, typer.Option("--template", help="Config template to merge.")
    ] = None,
    project_id: Annotated[
        int | None, typer.Option("--project-id", "--project_id", help="Project to place it in.")
    ] = None,
    paused: Annotated[bool, typer.Option("--paused", help="Create without activating.")] = False,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--config", help="Override a config value: key.path=YAML (repeatable)."),
    ] = None,
    follow: Annotated[
        bool, typer.Option("-f", "--follow", help="Stream the first trial's logs to the end.")
    ] = False,
    publish: Annotated[
        list[str] | None,
        typer.Option(
            "-p",
            "--publish",
            help="With -f: serve the first trial's port on localhost while following "
            "(PORT or LOCAL_PORT:TASK_PORT; the port is in its environment.proxy_ports).",
        ),
    ] = None,
) -> None:
    """Create an experiment from CONFIG_FILE and an optional CONTEXT_DIR."""
    config_text = read_config(config_file, overrides or [])
    files = read_context(context_dir)
    session = open_session(ctx)
    body = json.dumps(
        build_request(config_text, files, paused=paused, project_id=project_id, template=template)
    ).encode()
    with byte_progress("Uploading", len(body), min_bytes=PROGRESS_MIN_BYTES) as advance:
        reply = session.client.post("/api/v1/experiments", body, progress=advance)
    experiment = reply.get("experiment") or {}
    experiment_id = experiment.get("id")
    if experiment_id is None:
        raise CliError("the master's reply has no experiment id")
    for warning in reply.get("warnings") or []:
        print_warning(f"warning: {warning}")
    echo(f"Created experiment {experiment_id}")
    if not follow:
        return
    sleep = global_options(ctx).sleep
    with contextlib.ExitStack() as published:
        if publish:
            ports = port_tunnel.parse_publish(publish)
            task_id = first_trial_task(session.client, int(experiment_id), sleep)
            client = session.client
            published.enter_context(
                port_tunnel.listening(client.master_url, task_id, ports, client.token)
            )
        state = follow_experiment(session.client, int(experiment_id), sleep=sleep)
    message = f"Experiment {experiment_id} ended in state {strip_state(state) or 'UNKNOWN'}"
    if state == "STATE_ERROR":
        raise CliError(message)
    echo(message)
