"""`det` entry point: the typer app, global options and the error boundary."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from cli import __version__
from cli.commands import (
    agent,
    checkpoint,
    cmd,
    config_policies,
    deploy,
    deploy_local_compat,
    experiment,
    job,
    master,
    model,
    notebook,
    preview_search,
    project,
    rbac,
    resource_pool,
    resources,
    shell,
    slot,
    task,
    template,
    tensorboard,
    token,
    trial,
    user,
    user_group,
    version,
    workspace,
    workspace_members,
)
from cli.errors import CliError
from cli.render import print_error
from cli.session import GlobalOptions


class DetGroup(TyperGroup):
    """Root command group: expected failures become one red line and exit code 1."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as exc:
            print_error(exc.message)
            raise typer.Exit(exc.exit_code) from None


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"det {__version__}")
        raise typer.Exit()


def build_app() -> typer.Typer:
    app = typer.Typer(
        cls=DetGroup,
        name="det",
        help="Command-line client for a Resolute (Determined-compatible) master.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def root(
        ctx: typer.Context,
        master_addr: Annotated[
            str | None,
            typer.Option(
                "-m",
                "--master",
                help="Master address (else $DET_MASTER, $DET_MASTER_ADDR, localhost:8080).",
                show_default=False,
            ),
        ] = None,
        user_name: Annotated[
            str | None,
            typer.Option("-u", "--user", help="Act as this user.", show_default=False),
        ] = None,
        _version: Annotated[
            bool,
            typer.Option(
                "--version",
                callback=_print_version,
                is_eager=True,
                help="Print the client version and exit.",
            ),
        ] = False,
    ) -> None:
        options = ctx.obj if isinstance(ctx.obj, GlobalOptions) else GlobalOptions()
        options.master, options.user = master_addr, user_name
        ctx.obj = options

    app.command("version", help="Show the client and master versions.")(version.show_version)
    app.command("preview-search", help="Preview a hyperparameter search.")(
        preview_search.preview_search
    )
    app.add_typer(master.app, name="master", help="Inspect the master.")
    app.add_typer(user.app, name="user", help="Log in and manage users.")
    app.add_typer(user_group.app, name="user-group", help="Manage user groups.")
    app.add_typer(token.app, name="token", help="Access tokens for automation (alias: tkn).")
    app.add_typer(config_policies.app, name="config-policies", help="Config policies (alias: cp).")
    app.add_typer(config_policies.app, name="cp", hidden=True)
    app.add_typer(token.app, name="tkn", hidden=True)
    app.add_typer(rbac.app, name="rbac", help="Roles and role assignments (RBAC).")
    app.add_typer(experiment.app, name="experiment", help="Manage experiments (alias: e).")
    app.add_typer(experiment.app, name="e", hidden=True)
    app.add_typer(trial.app, name="trial", help="Inspect trials (alias: t).")
    app.add_typer(trial.app, name="t", hidden=True)
    app.add_typer(template.app, name="template", help="Manage config templates.")
    app.add_typer(
        checkpoint.app,
        name="checkpoint",
        help="Inspect, protect and delete checkpoints (alias: c).",
    )
    app.add_typer(checkpoint.app, name="c", hidden=True)
    app.add_typer(model.app, name="model", help="The model registry (alias: m).")
    app.add_typer(model.app, name="m", hidden=True)
    app.add_typer(workspace.app, name="workspace", help="Manage workspaces (alias: w).")
    app.add_typer(workspace.app, name="w", hidden=True)
    app.add_typer(project.app, name="project", help="Manage projects (alias: p).")
    app.add_typer(project.app, name="p", hidden=True)
    experiment.app.command("move")(project.experiment_move)
    workspace.app.command("list-members")(workspace_members.list_members)
    for name, command in (
        ("cluster-up", deploy_local_compat.cluster_up),
        ("cluster-down", deploy_local_compat.cluster_down),
        ("logs", deploy_local_compat.logs),
    ):
        deploy.local_app.command(name)(command)
    app.add_typer(job.app, name="job", help="The job queue: list jobs, reorder them (alias: j).")
    app.add_typer(job.app, name="j", hidden=True)
    app.add_typer(
        resource_pool.app, name="resource-pool", help="Inspect resource pools (alias: rp)."
    )
    app.add_typer(resource_pool.app, name="rp", hidden=True)
    app.add_typer(resources.app, name="resources", help="Historical usage and cost (alias: res).")
    app.add_typer(resources.app, name="res", hidden=True)
    app.add_typer(agent.app, name="agent", help="List, enable and disable agents (alias: a).")
    app.add_typer(agent.app, name="a", hidden=True)
    app.add_typer(slot.app, name="slot", help="List the agents' slots (alias: s).")
    app.add_typer(slot.app, name="s", hidden=True)
    app.add_typer(cmd.app, name="cmd", help="Run commands on the cluster (alias: command).")
    app.add_typer(cmd.app, name="command", hidden=True)
    app.add_typer(notebook.app, name="notebook", help="JupyterLab on the cluster.")
    app.add_typer(tensorboard.app, name="tensorboard", help="TensorBoard over experiments.")
    app.add_typer(shell.app, name="shell", help="SSH into a task on the cluster.")
    app.add_typer(
        task.app, name="task", help="List live tasks, read any task's logs, run generic tasks."
    )
    app.add_typer(deploy.app, name="deploy", help="Start and stop clusters (local: this machine).")
    return app


app = build_app()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (`det = "cli.main:main"`)."""
    try:
        app(args=argv, prog_name="det")
    except KeyboardInterrupt:
        print_error("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
