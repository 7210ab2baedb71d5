"""`det shell`: an sshd in a task, reached with the real `ssh` through the master's WebSocket
proxy (ProxyCommand `python -m cli.tunnel`), logged in with the key the master made for it."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from cli import interactive
from cli.client import ApiClient, path_quote
from cli.commands.notebook import ConfigFile, Context, Overrides, Template, Volumes
from cli.errors import CliError
from cli.logs import print_logs, task_logs_path
from cli.options import FollowOption, JsonOption, TailOption
from cli.render import echo
from cli.session import global_options, open_session

app = typer.Typer(no_args_is_help=True)
PLURAL, SINGULAR = "shells", "shell"
PASSTHROUGH = {"allow_interspersed_args": False, "ignore_unknown_options": True}
SshOpts = Annotated[
    list[str] | None, typer.Argument(help="After --: ssh options and a command to run.")
]


@contextlib.contextmanager
def key_file(private_key: str) -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="det-shell-")
    path = Path(folder) / "key"
    try:
        path.touch(mode=0o600)
        path.write_text(private_key if private_key.endswith("\n") else private_key + "\n")
        yield str(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def ssh_argv(master: str, shell: dict[str, Any], key: str, extra: list[str]) -> list[str]:
    proxy = f"{shlex.quote(sys.executable)} -m cli.tunnel {shlex.quote(master)} %h"
    user = (shell.get("agentUserGroup") or {}).get("user") or "root"
    return [
        "ssh", "-o", f"ProxyCommand={proxy}", "-o", "StrictHostKeyChecking=no",
        "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "IdentitiesOnly=yes",
        "-i", key, "-p", "22", f"{user}@{shell['id']}", *extra,
    ]  # fmt: skip


def _connect(
    client: ApiClient, shell: dict[str, Any], extra: list[str], sleep: Any = time.sleep
) -> int:
    if shutil.which("ssh") is None:
        raise CliError("no `ssh` on PATH: install OpenSSH's client (Debian: openssh-client)")
    interactive.wait_ready(client, shell["id"], SINGULAR, sleep)
    if not shell.get("privateKey"):
        shell = client.get(f"/api/v1/{PLURAL}/{path_quote(shell['id'])}")[SINGULAR]
    if not shell.get("privateKey"):
        raise CliError(f"only the owner of shell {shell['id']} gets its key")
    with key_file(shell["privateKey"]) as key:
        argv = ssh_argv(client.master_url, shell, key, extra)
        env = {**os.environ, "DET_TUNNEL_TOKEN": client.token or ""}
        return subprocess.call(argv, env=env)


@app.command("start", context_settings=PASSTHROUGH)
def start(
    ctx: typer.Context,
    ssh_opts: SshOpts = None,
    config_file: ConfigFile = None,
    overrides: Overrides = None,
    volumes: Volumes = None,
    context_dir: Context = None,
    template: Template = None,
    detach: Annotated[bool, typer.Option("-d", "--detach", help="Print the ID; return.")] = False,
) -> None:
    """Start a shell and connect; `det shell start -- CMD` runs CMD and exits with its code."""
    session = open_session(ctx)
    config = interactive.load_config(config_file, overrides or [], volumes or [])
    shell = interactive.launch(session.client, PLURAL, SINGULAR, config, context_dir, template)
    if detach:
        echo(shell["id"])
        return
    interactive.announce(SINGULAR, shell)
    raise typer.Exit(
        _connect(session.client, shell, list(ssh_opts or []), global_options(ctx).sleep)
    )


@app.command("open", context_settings=PASSTHROUGH)
def open_(
    ctx: typer.Context, shell_id: Annotated[str, typer.Argument()], ssh_opts: SshOpts = None
) -> None:
    """Connect to a running shell (after --: ssh options and a command)."""
    session = open_session(ctx)
    shell = session.client.get(f"/api/v1/{PLURAL}/{path_quote(shell_id)}")[SINGULAR]
    raise typer.Exit(
        _connect(session.client, shell, list(ssh_opts or []), global_options(ctx).sleep)
    )


@app.command("show_ssh_command")
def show_ssh_command(ctx: typer.Context, shell_id: Annotated[str, typer.Argument()]) -> None:
    """Print the ssh command line for a shell; its key is kept in a private folder."""
    session = open_session(ctx)
    shell = session.client.get(f"/api/v1/{PLURAL}/{path_quote(shell_id)}")[SINGULAR]
    if not shell.get("privateKey"):
        raise CliError(f"only the owner of shell {shell_id} gets its key")
    folder = Path.home() / ".cache" / "det-resolute" / "shell" / shell["id"]
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = folder / "key"
    key.touch(mode=0o600)
    key.write_text(shell["privateKey"])
    echo(shlex.join(ssh_argv(session.client.master_url, shell, str(key), [])))


app.command("show-ssh-command", hidden=True)(show_ssh_command)


@app.command("list")
def list_(
    ctx: typer.Context,
    show_all: Annotated[bool, typer.Option("-a", "--all", help="Everyone's.")] = False,
    as_json: JsonOption = False,
) -> None:
    """List your shells (--all: everyone's) (alias: ls)."""
    session = open_session(ctx)
    user = None if show_all else session.username
    interactive.list_tasks(session.client, PLURAL, user, as_json)


app.command("ls", hidden=True)(list_)


@app.command("kill")
def kill(ctx: typer.Context, ids: Annotated[list[str], typer.Argument(help="IDs.")]) -> None:
    """Kill shells."""
    interactive.kill(open_session(ctx).client, PLURAL, SINGULAR, ids)


@app.command("logs")
def logs(
    ctx: typer.Context,
    shell_id: Annotated[str, typer.Argument()],
    follow: FollowOption = False,
    tail: TailOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a shell's logs."""
    client = open_session(ctx).client
    print_logs(client, task_logs_path(shell_id), follow=follow, tail=tail, as_json=as_json)


app.add_typer(interactive.set_app(PLURAL, SINGULAR), name="set")
