"""`det cmd` (alias `command`): run a program on the cluster, list, kill and read logs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.client import ApiClient, path_quote
from cli.commands.experiment_create import read_context
from cli.errors import CliError
from cli.interactive import load_config, set_app
from cli.log_filters import (
    AfterOption,
    AgentIdOption,
    AllocationIdOption,
    BeforeOption,
    ContainerIdOption,
    HeadOption,
    LevelOption,
    RankIdOption,
    SourceOption,
    StdtypeOption,
    filter_params,
)
from cli.logs import print_logs, task_logs_path
from cli.options import CsvOption, FollowOption, JsonOption, TailOption
from cli.render import echo, stderr_console, strip_state
from cli.session import open_session
from cli.task_lists import (
    ForceOption,
    OrderBy,
    OrderByOption,
    QuietOption,
    SortBy,
    SortByOption,
    WorkspaceNameOption,
    kill_tasks,
    list_tasks,
    workspace_field,
)
from cli.yaml_config import apply_overrides, load_mapping

app = typer.Typer(no_args_is_help=True)

COMMANDS_PATH = "/api/v1/commands"

CommandIdArg = Annotated[str, typer.Argument(help="Command ID (its task ID).")]


def build_config(argv: list[str], config_file: Path | None, overrides: list[str]) -> dict[str, Any]:
    """The command config: the file, then `--config` overrides, then ARGS as the entrypoint
    unless the config already names one (as the real client does)."""
    config: dict[str, Any] = {}
    if config_file is not None:
        _, config = load_mapping(config_file, "command config")
    config = apply_overrides(config, overrides)
    if not config.get("entrypoint") and argv:
        config["entrypoint"] = list(argv)
    if not config.get("entrypoint"):
        raise CliError("nothing to run: give the command after `det cmd run`, e.g. det cmd run ls")
    return config


def command_failure(command: dict[str, Any]) -> CliError | None:
    """None when the command exited 0; else an error whose exit code is the command's own
    (1 when it has none, or one outside 1..255)."""
    code = command.get("exitCode")
    state = str(command.get("state") or "")
    if state == "STATE_TERMINATED" and code == 0:
        return None
    status = command.get("exitStatus") or strip_state(state).lower() or "unknown state"
    error = CliError(f"command {command.get('id')}: {status}")
    error.exit_code = code if isinstance(code, int) and 0 < code < 256 else 1
    return error


@app.command(
    "run", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True}
)
def run(
    ctx: typer.Context,
    argv: Annotated[
        list[str] | None,
        typer.Argument(
            help="The program and its arguments.", metavar="ARGS...", show_default=False
        ),
    ] = None,
    context_dir: Annotated[
        Path | None,
        typer.Option("-c", "--context", help="Directory copied into the task's working dir."),
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config-file", help="Command config (YAML).")
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--config", help="Set a config value: key.path=YAML (repeatable)."),
    ] = None,
    template: Annotated[
        str | None, typer.Option("--template", help="Config template to merge.")
    ] = None,
    detach: Annotated[
        bool, typer.Option("-d", "--detach", help="Print the command's ID and return.")
    ] = False,
    volumes: Annotated[
        list[str] | None,
        typer.Option("-v", "--volume", help="HOST:CONTAINER bind mount (repeatable)."),
    ] = None,
    workspace_name: WorkspaceNameOption = None,
) -> None:
    """Run ARGS on the cluster and stream its output; exits with the command's exit code."""
    config = build_config(list(argv or []), config_file, overrides or [])
    mounts = load_config(None, [], volumes or []).get("bind_mounts") or []
    if mounts:
        config["bind_mounts"] = [*(config.get("bind_mounts") or []), *mounts]
    files = read_context(context_dir)
    client = open_session(ctx).client
    body: dict[str, Any] = {"config": config, **workspace_field(client, workspace_name)}
    if files:
        body["files"] = files
    if template:
        body["template_name"] = template
    command = (client.post(COMMANDS_PATH, body) or {}).get("command") or {}
    task_id = command.get("id")
    if not task_id:
        raise CliError("the master's reply has no command id")
    if detach:
        echo(str(task_id))
        return
    stderr_console().print(f"Launched command {task_id} ({command.get('description', '')})")
    try:
        print_logs(client, task_logs_path(task_id), follow=True)
    except KeyboardInterrupt:
        stderr_console().print(f"Stopped following; the command runs on: det cmd logs -f {task_id}")
        raise
    final = client.get(f"{COMMANDS_PATH}/{path_quote(task_id)}").get("command") or {}
    failure = command_failure(final)
    if failure is not None:
        raise failure


def fetch_commands(client: ApiClient, username: str | None) -> list[dict[str, Any]]:
    params = {"users": username} if username else {}
    return client.paginate(COMMANDS_PATH, "commands", params)


@app.command("list")
def list_commands(
    ctx: typer.Context,
    show_all: Annotated[
        bool, typer.Option("-a", "--all", help="Show every user's commands.")
    ] = False,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
    quiet: QuietOption = False,
    workspace_name: WorkspaceNameOption = None,
    sort_by: SortByOption = SortBy.startTime,
    order_by: OrderByOption = OrderBy.asc,
) -> None:
    """List your commands (--all: everyone's) (alias: ls)."""
    session = open_session(ctx)
    list_tasks(
        session.client,
        "commands",
        username=None if show_all else session.username,
        workspace_name=workspace_name,
        sort_by=sort_by,
        order_by=order_by,
        quiet=quiet,
        as_json=as_json,
        as_csv=as_csv,
    )


app.command("ls", hidden=True)(list_commands)


@app.command("kill")
def kill(
    ctx: typer.Context,
    command_ids: Annotated[list[str], typer.Argument(help="Command IDs.")],
    force: ForceOption = False,
) -> None:
    """Kill commands: a queued one ends at once, a running one gets SIGKILL."""
    kill_tasks(open_session(ctx).client, "commands", "command", command_ids, force=force)


@app.command("logs")
def logs(
    ctx: typer.Context,
    command_id: CommandIdArg,
    follow: FollowOption = False,
    tail: TailOption = None,
    as_json: JsonOption = False,
    head: HeadOption = None,
    agent_ids: AgentIdOption = None,
    container_ids: ContainerIdOption = None,
    rank_ids: RankIdOption = None,
    allocation_ids: AllocationIdOption = None,
    timestamp_before: BeforeOption = None,
    timestamp_after: AfterOption = None,
    level: LevelOption = None,
    sources: SourceOption = None,
    stdtypes: StdtypeOption = None,
) -> None:
    """Print a command's output (GET /api/v1/tasks/{id}/logs)."""
    client = open_session(ctx).client
    filters = filter_params(
        agent_ids=agent_ids,
        container_ids=container_ids,
        rank_ids=rank_ids,
        allocation_ids=allocation_ids,
        sources=sources,
        stdtypes=stdtypes,
        level=level,
        timestamp_before=timestamp_before,
        timestamp_after=timestamp_after,
    )
    path = task_logs_path(command_id)
    print_logs(client, path, follow=follow, tail=tail, as_json=as_json, head=head, filters=filters)


app.add_typer(set_app("commands", "command"), name="set")
