"""`det deploy local up|down`: a master and agents on this machine, as detached processes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.client import canonicalize_master_url
from cli.commands.deploy_aws import app as aws_app
from cli.commands.deploy_gcp import app as gcp_app
from cli.deploy import local
from cli.render import echo, print_warning
from cli.session import token_store

app = typer.Typer(no_args_is_help=True)
local_app = typer.Typer(no_args_is_help=True)
app.add_typer(
    local_app, name="local", help="A master and N agents on this machine (embedded default)."
)
app.add_typer(aws_app, name="aws", help="A cluster on AWS (CloudFormation); docs/deploy-aws.md.")
app.add_typer(gcp_app, name="gcp", help="A cluster on GCP (Terraform); docs/deploy-gcp.md.")

DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Where the master's database, checkpoints, logs and pids live "
        "(default: the master's own, $XDG_DATA_HOME/resolute or ~/.local/share/resolute).",
        show_default=False,
    ),
]
GraceOption = Annotated[
    float,
    typer.Option("--grace", min=0, help="Seconds between SIGTERM and SIGKILL when stopping."),
]


def _data_dir(option: Path | None) -> Path:
    return (option or local.default_data_dir()).expanduser().resolve()


def _describe(deployment: local.Deployment, password_file: Path) -> None:
    agents = deployment.by_role("agent")
    slots = "detected" if deployment.slots_per_agent is None else deployment.slots_per_agent
    master = deployment.by_role("master")
    rows: list[tuple[str, object]] = [("Master", deployment.master_url)]
    if master:
        rows.append(("master", f"pid {master[0].pid}  {master[0].log}"))
    rows.append(("Agents", f"{len(agents)} × {slots} slots, {deployment.runtime} runtime"))
    rows += [(a.name, f"pid {a.pid}  {a.log}") for a in agents]
    if deployment.task_python:
        rows.append(("Task Python", deployment.task_python))
    if deployment.task_users:
        rows.append(("Task users", deployment.task_users))
    elif deployment.single_user_because:  # a deployment recorded by an older `up`
        why = ", ".join(deployment.single_user_because)
        rows.append(("Task users", f"single-user (others cannot pass through {why})"))
    rows += [
        ("Data directory", deployment.data_dir),
        ("Login", f"admin, password in {password_file}"),
        ("Stop with", f"det deploy local down --data-dir {deployment.data_dir}"),
    ]
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        echo(f"  {key:<{width}}  {value}")


@local_app.command("up")
def up(
    agents: Annotated[int, typer.Option("--agents", min=0, help="Agents to start.")] = 1,
    slots_per_agent: Annotated[
        int | None,
        typer.Option(
            "--slots-per-agent",
            min=1,
            help="Artificial slots per agent (default: the agent detects its devices).",
            show_default=False,
        ),
    ] = None,
    runtime: Annotated[
        str,
        typer.Option(
            "--runtime", help="auto (docker when an engine answers, else process), docker, process."
        ),
    ] = "auto",
    port: Annotated[
        int, typer.Option("--port", min=1, max=65535, help="Master port on 127.0.0.1.")
    ] = 8080,
    data_dir: DataDirOption = None,
    master_config: Annotated[
        Path | None,
        typer.Option("--master-config", help="Master YAML to start with.", show_default=False),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds to wait for each start-up step.")
    ] = 60.0,
    grace: GraceOption = 10.0,
    task_python: Annotated[
        str | None,
        typer.Option(
            "--task-python",
            help="The Python process-runtime tasks run: an interpreter, a virtualenv folder or "
            "a command name (default: a task venv made once in the data directory, over this "
            "installation's packages; see docs/deploy-local.md).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Start a master (SQLite + shared_fs in the data directory) and agents, detached."""
    options = local.LocalOptions(
        data_dir=_data_dir(data_dir),
        agents=agents,
        slots_per_agent=slots_per_agent,
        runtime=runtime,
        port=port,
        master_config=master_config.resolve() if master_config else None,
        task_python=task_python,
    )
    try:
        started = local.up(options, timeout_s=timeout, grace_s=grace)
    except local.AlreadyRunning as exc:
        echo(f"Already running (started from {exc.deployment.data_dir}):")
        _describe(exc.deployment, options.data_dir / local.PASSWORD_FILE)
        return
    if started.cleaned_up:
        print_warning(
            "stopped what was left of an earlier deployment: " + ", ".join(started.cleaned_up)
        )
    deployment = started.deployment
    # Log the caller in as admin, so `det …` works against the new master straight away.
    store = token_store()
    master = canonicalize_master_url(deployment.master_url)
    store.set_token(master, "admin", started.token)
    store.set_active_user(master, "admin")
    echo(f"Local deployment is up (logged in as admin on {deployment.master_url}):")
    _describe(deployment, options.data_dir / local.PASSWORD_FILE)


@local_app.command("down")
def down(data_dir: DataDirOption = None, grace: GraceOption = 10.0) -> None:
    """Stop the agents (and their task containers), then the master; safe to repeat."""
    directory = _data_dir(data_dir)
    stopped = local.down(directory, grace_s=grace)
    if stopped is None:
        echo(f"Nothing to stop: no local deployment is recorded in {directory}")
        return
    if stopped.killed:
        print_warning(
            f"killed after {grace:g} s without exiting on SIGTERM: {', '.join(stopped.killed)}"
        )
    what = ", ".join(stopped.stopped) or "nothing was still running"
    extra = f"; stopped {stopped.tasks} tasks left by the agents" if stopped.tasks else ""
    echo(f"Stopped: {what}{extra}")
