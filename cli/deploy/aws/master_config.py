"""The master config of an AWS cluster: a pure function of what the stack knows.

The same function renders it for `up --dry-run`, `dump-master-config-template` and, on the
master instance at boot (cli.deploy.aws.boot), the file the master really reads, so the three
cannot drift. Secrets are not in it: the database URL and the initial password reach the master
as DET_* environment variables read from SSM at each start (cli.deploy.aws.boot secrets).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from cli.deploy.aws.options import CLUSTER_TAG, MASTER_PORT

AUX_POOL = "aux-pool"
COMPUTE_POOL = "compute-pool"
VENV = "/opt/resolute/venv"
RUNTIME_DIR = "/run/resolute"
"""The unit's tmpfs runtime directory, where the start step writes the secrets it reads."""
TLS_CERT = f"{RUNTIME_DIR}/master.crt"
TLS_KEY = f"{RUNTIME_DIR}/master.key"


@dataclass(frozen=True)
class ClusterFacts:
    """What the master's user-data hands over: stack parameters and resource ids."""

    cluster_id: str
    region: str
    bucket: str
    wheel_key: str
    agent_security_group: str
    agent_instance_profile_arn: str
    subnet_id: str
    key_name: str
    agent_image_id: str
    aux_instance_type: str
    compute_instance_type: str
    max_dynamic_agents: int
    max_aux_containers_per_agent: int
    spot: bool
    spot_max_price: str
    max_idle_agent_period: str
    max_agent_starting_period: str
    scheduler_type: str
    preemption_enabled: bool
    master_tls: bool = False
    master_cert_name: str = ""


def agent_install(bucket: str, wheel_key: str) -> str:
    """The command a dynamic agent runs to install the master's own wheel from the bucket."""
    wheel = "/tmp/" + wheel_key.rsplit("/", 1)[-1]
    steps = [
        "apt-get update -q",
        "DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv awscli",
        f"aws s3 cp {shlex.quote(f's3://{bucket}/{wheel_key}')} {shlex.quote(wheel)}",
        f"python3 -m venv {VENV}",
        f"{VENV}/bin/pip install -q {shlex.quote(wheel + '[aws]')}",
        f"ln -sf {VENV}/bin/det-agent /usr/local/bin/det-agent",
    ]
    return " && ".join(steps)


def _provider(facts: ClusterFacts, instance_type: str, *, spot: bool) -> dict[str, Any]:
    provider: dict[str, Any] = {
        "type": "aws",
        "region": facts.region,
        # Looked up by the provisioner on the master's instance: its private address.
        "master_url": f"{'https' if facts.master_tls else 'http'}://local-ipv4:{MASTER_PORT}",
        "tag_key": CLUSTER_TAG,
        "tag_value": facts.cluster_id,
        "instance_name": f"resolute-agent-{facts.cluster_id}",
        "ssh_key_name": facts.key_name,
        "image_id": facts.agent_image_id,
        "instance_type": instance_type,
        "network_interface": {
            "public_ip": True,
            "subnet_id": facts.subnet_id,
            "security_group_id": facts.agent_security_group,
        },
        "iam_instance_profile_arn": facts.agent_instance_profile_arn,
        "max_instances": facts.max_dynamic_agents,
        "max_idle_agent_period": facts.max_idle_agent_period,
        "max_agent_starting_period": facts.max_agent_starting_period,
        "cpu_slots_allowed": True,
        "agent_install": agent_install(facts.bucket, facts.wheel_key),
    }
    if facts.master_cert_name:
        provider["master_cert_name"] = facts.master_cert_name
    if spot:
        provider["spot"] = True
        if facts.spot_max_price:
            provider["spot_max_price"] = facts.spot_max_price
    return provider


def render_master_config(facts: ClusterFacts) -> dict[str, Any]:
    """The master YAML as a mapping: S3 checkpoints, an aux pool and an elastic compute pool."""
    scheduler: dict[str, Any] = {"type": facts.scheduler_type}
    if facts.scheduler_type == "priority":
        scheduler["preemption"] = facts.preemption_enabled
    config: dict[str, Any] = {
        "port": MASTER_PORT,
        "cluster_name": facts.cluster_id,
        "checkpoint_storage": {
            "type": "s3",
            "bucket": facts.bucket,
            "prefix": "checkpoints",
            "save_experiment_best": 0,
            "save_trial_best": 1,
            "save_trial_latest": 1,
        },
        "resource_manager": {
            "type": "agent",
            "scheduler": scheduler,
            "default_aux_resource_pool": AUX_POOL,
            "default_compute_resource_pool": COMPUTE_POOL,
        },
        "resource_pools": [
            {
                "pool_name": AUX_POOL,
                "description": "CPU agents for commands, notebooks and TensorBoards",
                "max_aux_containers_per_agent": facts.max_aux_containers_per_agent,
                "provider": _provider(facts, facts.aux_instance_type, spot=False),
            },
            {
                "pool_name": COMPUTE_POOL,
                "description": "GPU agents for trials",
                "max_aux_containers_per_agent": 0,
                "provider": _provider(facts, facts.compute_instance_type, spot=facts.spot),
            },
        ],
    }
    if facts.master_tls:
        # Written by the unit's start step from SSM (boot.py secrets), never part of user-data.
        config["security"] = {"tls": {"cert": TLS_CERT, "key": TLS_KEY}}
    return config


PLACEHOLDERS = ClusterFacts(
    cluster_id="<cluster-id>",
    region="<region>",
    bucket="<checkpoint-bucket>",
    wheel_key="wheels/<sha256>/<resolute wheel>",
    agent_security_group="<agent-security-group-id>",
    agent_instance_profile_arn="<agent-instance-profile-arn>",
    subnet_id="<subnet-id>",
    key_name="<keypair>",
    agent_image_id="<agent-ami-id>",
    aux_instance_type="m5.xlarge",
    compute_instance_type="g4dn.metal",
    max_dynamic_agents=5,
    max_aux_containers_per_agent=16,
    spot=False,
    spot_max_price="",
    max_idle_agent_period="10m",
    max_agent_starting_period="20m",
    scheduler_type="fair_share",
    preemption_enabled=False,
)
"""What `dump-master-config-template` fills the deploy-time values with."""
