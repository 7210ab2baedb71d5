"""`det deploy aws up|down|list|status|dump-master-config-template` (docs/deploy-aws.md)."""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.errors import CliError
from cli.render import echo, print_table, print_warning, to_yaml

app = typer.Typer(no_args_is_help=True)

ClusterId = Annotated[
    str, typer.Option("--cluster-id", help="The cluster's name: its CloudFormation stack name.")
]
Region = Annotated[str, typer.Option("--region", help="AWS region.")]
Profile = Annotated[
    str | None, typer.Option("--profile", help="AWS profile (default: boto3's own choice).")
]
DEFAULT_REGION = "us-west-2"


def _aws(region: str, profile: str | None):
    # boto3 is imported only by the aws commands: `det` starts fast for everything else.
    from cli.deploy.aws.clients import Aws

    return Aws(region=region, profile=profile)


def _aws_errors(command: Callable[..., None]) -> Callable[..., None]:
    """An AWS refusal is one clear line (operation, code, AWS's message), not a traceback."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        from cli.deploy.aws.clients import BotoCoreError, ClientError

        try:
            command(*args, **kwargs)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise CliError(
                f"AWS refused {exc.operation_name}: {error.get('Code', '?')}: "
                f"{error.get('Message', str(exc))}"
            ) from None
        except BotoCoreError as exc:
            raise CliError(f"AWS: {exc}") from None

    return run


def _tags(pairs: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise CliError(f"--add-tag {pair!r}: write KEY=VALUE")
        out.append((key, value))
    return tuple(out)


@app.command("up")
@_aws_errors
def up(
    cluster_id: ClusterId,
    keypair: Annotated[str, typer.Option("--keypair", help="EC2 key pair for SSH.")],
    region: Region = DEFAULT_REGION,
    profile: Profile = None,
    master_instance_type: Annotated[str, typer.Option("--master-instance-type")] = "m6i.large",
    aux_agent_instance_type: Annotated[
        str, typer.Option("--aux-agent-instance-type")
    ] = "m5.xlarge",
    compute_agent_instance_type: Annotated[
        str, typer.Option("--compute-agent-instance-type")
    ] = "g4dn.metal",
    max_dynamic_agents: Annotated[int, typer.Option("--max-dynamic-agents")] = 5,
    max_aux_containers_per_agent: Annotated[
        int, typer.Option("--max-aux-containers-per-agent")
    ] = 16,
    spot: Annotated[bool, typer.Option("--spot", help="Compute agents on spot.")] = False,
    spot_max_price: Annotated[str, typer.Option("--spot-max-price")] = "",
    inbound_cidr: Annotated[str, typer.Option("--inbound-cidr")] = "0.0.0.0/0",
    db_instance_type: Annotated[str, typer.Option("--db-instance-type")] = "db.m7g.large",
    db_size: Annotated[int, typer.Option("--db-size", help="GiB.")] = 20,
    db_password: Annotated[
        str | None,
        typer.Option(
            "--db-password",
            help="Database password for a new cluster (default: a random one); kept in SSM.",
        ),
    ] = None,
    initial_user_password: Annotated[
        str | None,
        typer.Option(
            "--initial-user-password",
            help="Password of admin and determined on a new cluster (default: random); in SSM.",
        ),
    ] = None,
    max_idle_agent_period: Annotated[str, typer.Option("--max-idle-agent-period")] = "10m",
    max_agent_starting_period: Annotated[str, typer.Option("--max-agent-starting-period")] = "20m",
    scheduler_type: Annotated[str, typer.Option("--scheduler-type")] = "fair_share",
    preemption_enabled: Annotated[bool, typer.Option("--preemption-enabled")] = False,
    vpc_id: Annotated[str, typer.Option("--vpc-id", help="Deploy into this VPC.")] = "",
    subnet_ids: Annotated[
        str, typer.Option("--subnet-ids", help="Two subnets of --vpc-id, comma-separated.")
    ] = "",
    ami_parameter: Annotated[
        str, typer.Option("--ami-parameter", help="Public SSM parameter of the master's AMI.")
    ] = "/aws/service/debian/release/12/latest/amd64",
    agent_ami_parameter: Annotated[
        str, typer.Option("--agent-ami-parameter", help="SSM parameter of the agents' AMI.")
    ] = "/aws/service/debian/release/12/latest/amd64",
    add_tag: Annotated[
        list[str] | None, typer.Option("--add-tag", help="KEY=VALUE on the stack; repeat.")
    ] = None,
    master_tls_cert: Annotated[
        str | None,
        typer.Option(
            "--master-tls-cert",
            help="PEM certificate (chain) the master serves HTTPS with; kept in SSM.",
        ),
    ] = None,
    master_tls_key: Annotated[
        str | None,
        typer.Option("--master-tls-key", help="PEM private key of --master-tls-cert; in SSM."),
    ] = None,
    master_cert_name: Annotated[
        str,
        typer.Option(
            "--master-cert-name",
            help="Host name the agents expect in the certificate (default: the master's "
            "private IP must be in it).",
        ),
    ] = "",
    wheel: Annotated[
        Path | None,
        typer.Option("--wheel", help="Resolute wheel to install (default: build this one)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Show the diff, parameters, config and cost; change nothing."
        ),
    ] = False,
) -> None:
    """Create the cluster, or update it in place."""
    from cli.deploy.aws import stack as stack_ops
    from cli.deploy.aws.options import DeployOptions
    from cli.deploy.aws.secrets import ADVANCED_TIER_BYTES
    from cli.deploy.master_tls import read_master_tls

    try:
        tls = read_master_tls(master_tls_cert, master_tls_key, max_bytes=ADVANCED_TIER_BYTES)
        options = DeployOptions(
            cluster_id=cluster_id,
            keypair=keypair,
            region=region,
            master_instance_type=master_instance_type,
            aux_agent_instance_type=aux_agent_instance_type,
            compute_agent_instance_type=compute_agent_instance_type,
            max_dynamic_agents=max_dynamic_agents,
            max_aux_containers_per_agent=max_aux_containers_per_agent,
            spot=spot,
            spot_max_price=spot_max_price,
            inbound_cidr=inbound_cidr,
            db_instance_type=db_instance_type,
            db_size=db_size,
            max_idle_agent_period=max_idle_agent_period,
            max_agent_starting_period=max_agent_starting_period,
            scheduler_type=scheduler_type,
            preemption_enabled=preemption_enabled,
            vpc_id=vpc_id,
            subnet_ids=tuple(s for s in subnet_ids.split(",") if s),
            ami_parameter=ami_parameter,
            agent_ami_parameter=agent_ami_parameter,
            extra_tags=_tags(add_tag or []),
            master_tls=tls is not None,
            master_cert_name=master_cert_name,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    aws = _aws(region, profile)
    if dry_run:
        from cli.deploy.aws.dry_run_view import show_dry_run

        show_dry_run(stack_ops.dry_run(aws, options), options)
        return
    result = stack_ops.up(
        aws,
        options,
        wheel=wheel,
        new_password=lambda: secrets.token_urlsafe(24),
        say=echo,
        sleep=time.sleep,
        db_password=db_password,
        admin_password=initial_user_password,
        tls=tls,
    )
    if not result.changed:
        echo(f"Stack {cluster_id} is already up to date.")
    elif db_password and not result.secrets_made:
        print_warning("--db-password was ignored: the cluster's password is kept in SSM")
    outputs = result.outputs
    echo(f"Cluster {cluster_id} is {'up' if result.created else 'updated'}:")
    echo(f"  Master URL   {outputs.get('MasterUrl', '?')}")
    echo(f"  Login        {stack_ops.admin_login(cluster_id, region)}")
    echo(f"  Checkpoints  s3://{outputs.get('CheckpointBucket', '?')}")
    echo(f"  Use it with  det -m {outputs.get('MasterUrl', '?')} user login admin")


@app.command("down")
@_aws_errors
def down(
    cluster_id: ClusterId,
    region: Region = DEFAULT_REGION,
    profile: Profile = None,
    delete_data: Annotated[
        bool,
        typer.Option(
            "--delete-data",
            "--empty-bucket",
            help="Also delete the checkpoint bucket's contents, the database (no final "
            "snapshot) and the passwords.",
        ),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "--no-prompt", help="Do not ask.")] = False,
) -> None:
    """Terminate the agents, delete the stack, and report anything left."""
    from cli.deploy.aws import teardown

    if not yes:
        what = "and ALL ITS DATA " if delete_data else ""
        typer.confirm(f"Delete cluster {cluster_id} {what}in {region}?", abort=True)
    aws = _aws(region, profile)
    report = teardown.down(aws, cluster_id, delete_data=delete_data, say=echo, sleep=time.sleep)
    if report.kept:
        print_table(
            ["Kept on purpose", "Id", "State"], [(k.kind, k.id, k.detail) for k in report.kept]
        )
    if report.leaks:
        print_table(["Left over", "Id", "State"], [(k.kind, k.id, k.detail) for k in report.leaks])
        raise CliError(f"{len(report.leaks)} resource(s) tagged with {cluster_id} are left")
    echo(f"Nothing tagged with cluster {cluster_id} is left running in {region}.")


@app.command("list")
@_aws_errors
def list_clusters(region: Region = DEFAULT_REGION, profile: Profile = None) -> None:
    """Clusters in the region, found by their stacks' tags."""
    from cli.deploy.aws.status import clusters

    rows = clusters(_aws(region, profile))
    print_table(["Cluster", "Status", "Created", "Master URL", "Version"], rows)


@app.command("status")
@_aws_errors
def status(cluster_id: ClusterId, region: Region = DEFAULT_REGION, profile: Profile = None) -> None:
    """One cluster: its stack, outputs and dynamic agents."""
    from cli.deploy.aws.status import cluster_status

    pairs = cluster_status(_aws(region, profile), cluster_id)
    width = max(len(k) for k, _ in pairs)
    for key, value in pairs:
        echo(f"  {key:<{width}}  {value}")


@app.command("dump-master-config-template")
def dump_master_config_template() -> None:
    """The master config `up` renders on the master, with placeholders."""
    from cli.deploy.aws.master_config import PLACEHOLDERS, render_master_config

    echo(to_yaml(render_master_config(PLACEHOLDERS)).rstrip())
