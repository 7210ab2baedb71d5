"""`det deploy gcp up|down|list|dump-master-config-template` (Determined's flags, §8.2)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from cli.deploy import gcp
from cli.deploy.gcp_config import KNOWN_AFTER_APPLY, GcpDeployment, parse_labels
from cli.deploy.gcp_inventory import hourly_cost, inventory
from cli.deploy.gcp_template import MASTER_CONFIG_TEMPLATE, render_master_config
from cli.deploy.master_tls import read_master_tls
from cli.render import echo, print_json, print_table

SECRET_BYTES = 64 * 1024
"""Secret Manager's limit on a secret version's payload."""

app = typer.Typer(no_args_is_help=True)

ClusterId = Annotated[
    str, typer.Option("--cluster-id", help="Name of the cluster (1-22 of a-z, 0-9, -).")
]
ProjectId = Annotated[str, typer.Option("--project-id", help="GCP project.")]
StateBucketOption = Annotated[
    str | None,
    typer.Option(
        "--tf-state-gcs-bucket-name",
        help="Bucket of the Terraform state and variables "
        "(default: <cluster-id>-<project-id>-tfstate).",
        show_default=False,
    ),
]
LocalStatePath = Annotated[
    Path | None,
    typer.Option(
        "--local-state-path",
        help="Keep the Terraform working folder here (default: a temporary folder; the state "
        "itself is always in the state bucket).",
        show_default=False,
    ),
]
ComputeEndpoint = Annotated[str | None, typer.Option("--compute-endpoint", hidden=True)]
PollInterval = Annotated[float, typer.Option("--poll-interval", hidden=True, min=0.0)]


def _seams(compute_endpoint: str | None, poll_interval: float) -> gcp.Seams:
    return gcp.Seams(compute_endpoint=compute_endpoint, poll_interval=poll_interval, say=echo)


@app.command("up")
def up(
    cluster_id: ClusterId,
    project_id: ProjectId,
    region: Annotated[str, typer.Option("--region")] = "us-west1",
    zone: Annotated[str | None, typer.Option("--zone", help="Default: <region>-b.")] = None,
    network: Annotated[
        str | None, typer.Option("--network", help="Default: <cluster-id>-net.")
    ] = None,
    subnetwork_cidr: Annotated[str, typer.Option("--subnetwork-cidr")] = "10.10.0.0/20",
    inbound_cidr: Annotated[
        str, typer.Option("--inbound-cidr", help="Who may reach the master and SSH.")
    ] = "0.0.0.0/0",
    master_instance_type: Annotated[str, typer.Option("--master-instance-type")] = "n1-standard-2",
    port: Annotated[int, typer.Option("--port", help="Master port.")] = 8080,
    master_image: Annotated[str, typer.Option("--master-image")] = "debian-cloud/debian-12",
    aux_agent_instance_type: Annotated[
        str, typer.Option("--aux-agent-instance-type")
    ] = "n1-standard-4",
    compute_agent_instance_type: Annotated[
        str, typer.Option("--compute-agent-instance-type")
    ] = "n1-standard-32",
    gpu_type: Annotated[str, typer.Option("--gpu-type")] = "nvidia-tesla-t4",
    gpu_num: Annotated[int, typer.Option("--gpu-num")] = 4,
    environment_image: Annotated[
        str, typer.Option("--environment-image", help="Boot image of the dynamic agents.")
    ] = "projects/determined-ai/global/images/det-environments-0736b6d",
    min_dynamic_agents: Annotated[int, typer.Option("--min-dynamic-agents")] = 0,
    max_dynamic_agents: Annotated[int, typer.Option("--max-dynamic-agents")] = 5,
    max_aux_containers_per_agent: Annotated[
        int, typer.Option("--max-aux-containers-per-agent")
    ] = 16,
    max_idle_agent_period: Annotated[str, typer.Option("--max-idle-agent-period")] = "10m",
    max_agent_starting_period: Annotated[str, typer.Option("--max-agent-starting-period")] = "20m",
    preemptible: Annotated[bool, typer.Option("--preemptible/--no-preemptible")] = False,
    scheduler_type: Annotated[
        str, typer.Option("--scheduler-type", help="fair_share, priority or round_robin.")
    ] = "fair_share",
    preemption_enabled: Annotated[
        bool, typer.Option("--preemption-enabled/--no-preemption-enabled")
    ] = False,
    service_account_email: Annotated[
        str,
        typer.Option(
            "--service-account-email", help="Existing master service account (default: create one)."
        ),
    ] = "",
    db_password: Annotated[
        str,
        typer.Option(
            "--db-password",
            envvar="DET_DB_PASSWORD",
            help="Database password (default: generated). Kept in Secret Manager, "
            "never in metadata.",
            show_default=False,
        ),
    ] = "",
    db_tier: Annotated[str, typer.Option("--db-tier", "--db-instance-type")] = "db-custom-1-3840",
    db_size: Annotated[int, typer.Option("--db-size", help="GB.")] = 20,
    add_label: Annotated[
        list[str] | None, typer.Option("--add-label", help="key=value on every resource.")
    ] = None,
    master_tls_cert: Annotated[
        str | None,
        typer.Option(
            "--master-tls-cert",
            help="PEM certificate (chain) the master serves HTTPS with; in Secret Manager.",
        ),
    ] = None,
    master_tls_key: Annotated[
        str | None,
        typer.Option(
            "--master-tls-key", help="PEM private key of --master-tls-cert; in Secret Manager."
        ),
    ] = None,
    master_cert_name: Annotated[
        str,
        typer.Option(
            "--master-cert-name",
            help="Host name the agents expect in the certificate (default: the master's "
            "internal IP must be in it).",
        ),
    ] = "",
    state_bucket: StateBucketOption = None,
    local_state_path: LocalStatePath = None,
    wheel: Annotated[
        Path | None,
        typer.Option(
            "--wheel",
            help="The Resolute wheel to install (default: built from this source).",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the variables, what would be created and the cost; change nothing.",
        ),
    ] = False,
    compute_endpoint: ComputeEndpoint = None,
    poll_interval: PollInterval = 5.0,
) -> None:
    """Create the cluster, or update it in place."""
    try:
        tls = read_master_tls(master_tls_cert, master_tls_key, max_bytes=SECRET_BYTES)
        deployment = GcpDeployment(
            cluster_id=cluster_id,
            project_id=project_id,
            region=region,
            zone=zone or "",
            network=network or "",
            subnetwork_cidr=subnetwork_cidr,
            inbound_cidr=inbound_cidr,
            master_instance_type=master_instance_type,
            master_port=port,
            master_image=master_image,
            aux_agent_instance_type=aux_agent_instance_type,
            compute_agent_instance_type=compute_agent_instance_type,
            gpu_type=gpu_type,
            gpu_num=gpu_num,
            agent_image=environment_image,
            min_dynamic_agents=min_dynamic_agents,
            max_dynamic_agents=max_dynamic_agents,
            max_aux_containers_per_agent=max_aux_containers_per_agent,
            max_idle_agent_period=max_idle_agent_period,
            max_agent_starting_period=max_agent_starting_period,
            preemptible=preemptible,
            scheduler_type=scheduler_type,
            preemption_enabled=preemption_enabled,
            service_account_email=service_account_email,
            db_tier=db_tier,
            db_size=db_size,
            state_bucket=state_bucket or "",
            resolute_version=gcp.resolute_version(),
            labels=parse_labels(add_label or []),
            master_tls=tls is not None,
            master_cert_name=master_cert_name,
        )
    except ValueError as exc:
        raise gcp.DeployError(str(exc), exit_code=2) from None
    if dry_run:
        version = deployment.resolute_version
        wheel_name = f"resolute-{version}-py3-none-any.whl"
        _print_dry_run(replace(deployment, resolute_wheel=wheel_name), bool(db_password))
        return
    with gcp.cloud_errors():
        outputs = gcp.up(
            deployment,
            db_password=db_password,
            tls=tls,
            wheel=wheel,
            workdir=local_state_path,
            seams=_seams(compute_endpoint, poll_interval),
        )
    echo(f"Cluster {cluster_id} is up.")
    for key in ("master_url", "ssh_command", "checkpoint_bucket", "agent_label"):
        if key in outputs:
            echo(f"  {key:<18} {outputs[key]}")
    echo("  login              admin; the password is printed once in the master's log")


def _print_dry_run(d: GcpDeployment, password_given: bool) -> None:
    echo("Dry run: nothing was created and no cloud API was called.\n")
    echo(
        "Terraform variables (terraform.tfvars.json; the database password goes as "
        "TF_VAR_db_password):"
    )
    echo(json.dumps(d.tfvars(), indent=2, sort_keys=True))
    echo("\nWould create:")
    print_table(
        ["Module", "Resource", "Name"],
        [[p.module, p.resource, p.name] for p in inventory(d, password_given=password_given)],
    )
    echo("\nMaster config (written at boot; the password comes from Secret Manager):")
    echo(render_master_config(d.master_config_variables(KNOWN_AFTER_APPLY, KNOWN_AFTER_APPLY)))
    cost = hourly_cost(d)

    def usd(value: float | None) -> str:
        return "unknown for these types" if value is None else f"${value:.2f}/h"

    echo("Estimated cost (on-demand US list prices; see docs/deploy-gcp.md):")
    rows = [
        ("with no agents running", cost.idle),
        ("each compute agent adds", cost.per_compute_agent),
        (f"with {d.max_dynamic_agents} agents in each pool", cost.at_max),
    ]
    for label, value in rows:
        echo(f"  {label:<30} {usd(value)}")


@app.command("down")
def down(
    cluster_id: ClusterId,
    project_id: ProjectId,
    delete_data: Annotated[
        bool,
        typer.Option(
            "--delete-data", help="Required: down deletes the database and the checkpoint bucket."
        ),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "--no-prompt", help="Do not ask for confirmation.")
    ] = False,
    state_bucket: StateBucketOption = None,
    local_state_path: LocalStatePath = None,
    compute_endpoint: ComputeEndpoint = None,
    poll_interval: PollInterval = 5.0,
) -> None:
    """Delete the master and the dynamic agents, then every resource of the cluster."""
    with gcp.cloud_errors():
        deployment = gcp.load_deployment(cluster_id, project_id, state_bucket)
    gcp.check_can_destroy(deployment, delete_data)
    if not yes:
        typer.confirm(
            f"Delete cluster {cluster_id} in {project_id}, its database and its checkpoints?",
            abort=True,
        )
    with gcp.cloud_errors():
        seams = _seams(compute_endpoint, poll_interval)
        gcp.down(deployment, workdir=local_state_path, seams=seams)
    echo(f"Cluster {cluster_id} is down.")


@app.command("list")
def list_(
    project_id: ProjectId,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    compute_endpoint: ComputeEndpoint = None,
) -> None:
    """Clusters in the project, found by their master's labels (any zone)."""
    with gcp.cloud_errors():
        rows = gcp.list_clusters(project_id, _seams(compute_endpoint, 0.0))
    if as_json:
        print_json(rows)
        return
    columns = ["cluster_id", "zone", "master", "status", "master_ip"]
    print_table(
        ["Cluster", "Zone", "Master", "Status", "Master IP"],
        [[r[c] for c in columns] for r in rows],
    )


@app.command("dump-master-config-template")
def dump_master_config_template() -> None:
    """Print the master config template the master VM renders at boot."""
    echo(MASTER_CONFIG_TEMPLATE.read_text(), end="")
