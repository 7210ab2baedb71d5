"""What `det deploy aws up` is asked for, and the stack parameters it becomes.

Defaults follow Determined's `det deploy aws` (simple-rds) where they make sense; the names of
the tags and secrets every other part of the deployment finds the cluster by live here.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

CLUSTER_TAG = "resolute-cluster"
"""Tag on everything of a cluster (stack, its resources, dynamic agents, spot requests, secrets);
its value is the cluster id (= stack name). `down`, `list` and the leak report find by it."""
MANAGED_BY_TAG = "managed-by"
MANAGED_BY_VALUE = "resolute"

DEFAULT_REGION = "us-west-2"
DEFAULT_AMI_PARAMETER = "/aws/service/debian/release/12/latest/amd64"
"""Debian's public SSM parameter: the current Debian 12 AMI of whichever region reads it."""
POSTGRES_VERSION = "17.9"
MASTER_PORT = 8080
SCHEDULER_TYPES = ("fair_share", "priority", "round_robin")

_CLUSTER_ID = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,62}")
_DURATION = re.compile(r"\d+(ns|us|ms|s|m|h)")
_PRICE = re.compile(r"\d+(\.\d*)?|\.\d+")


def secret_path(cluster_id: str) -> str:
    """SSM folder of the cluster's SecureString parameters (the IAM role reads only this)."""
    return f"/resolute/{cluster_id}"


def db_password_parameter(cluster_id: str) -> str:
    return f"{secret_path(cluster_id)}/db-password"


def admin_password_parameter(cluster_id: str) -> str:
    return f"{secret_path(cluster_id)}/admin-password"


def tls_cert_parameter(cluster_id: str) -> str:
    return f"{secret_path(cluster_id)}/master-tls-cert"


def tls_key_parameter(cluster_id: str) -> str:
    return f"{secret_path(cluster_id)}/master-tls-key"


def check_cluster_id(cluster_id: str) -> str:
    """A CloudFormation stack name (it also becomes tag values and SSM paths); raises ValueError."""
    if not _CLUSTER_ID.fullmatch(cluster_id):
        raise ValueError(
            f"invalid cluster id {cluster_id!r}: 1-63 letters, digits and '-', starting with a "
            "letter (it is the CloudFormation stack name)"
        )
    return cluster_id


@dataclass(frozen=True)
class DeployOptions:
    """One `up`: every value that shapes the stack or the master config."""

    cluster_id: str
    keypair: str
    region: str = DEFAULT_REGION
    master_instance_type: str = "m6i.large"
    aux_agent_instance_type: str = "m5.xlarge"
    compute_agent_instance_type: str = "g4dn.metal"
    max_dynamic_agents: int = 5
    max_aux_containers_per_agent: int = 16
    spot: bool = False
    spot_max_price: str = ""
    inbound_cidr: str = "0.0.0.0/0"
    db_instance_type: str = "db.m7g.large"
    db_size: int = 20
    max_idle_agent_period: str = "10m"
    max_agent_starting_period: str = "20m"
    scheduler_type: str = "fair_share"
    preemption_enabled: bool = False
    vpc_id: str = ""
    subnet_ids: tuple[str, ...] = ()
    ami_parameter: str = DEFAULT_AMI_PARAMETER
    agent_ami_parameter: str = DEFAULT_AMI_PARAMETER
    extra_tags: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    master_tls: bool = False
    master_cert_name: str = ""

    def __post_init__(self) -> None:
        problems = []
        try:
            check_cluster_id(self.cluster_id)
        except ValueError as exc:
            problems.append(str(exc))
        if not self.keypair.strip():
            problems.append("--keypair must name an EC2 key pair")
        if not 1 <= self.max_dynamic_agents <= 1000:
            problems.append("--max-dynamic-agents must be between 1 and 1000")
        if self.max_aux_containers_per_agent < 1:
            problems.append("--max-aux-containers-per-agent must be at least 1")
        if self.db_size < 20:
            problems.append("--db-size must be at least 20 (GiB; RDS's minimum for gp3)")
        if self.scheduler_type not in SCHEDULER_TYPES:
            problems.append(f"--scheduler-type must be one of {', '.join(SCHEDULER_TYPES)}")
        for name, value in (
            ("--max-idle-agent-period", self.max_idle_agent_period),
            ("--max-agent-starting-period", self.max_agent_starting_period),
        ):
            if not _DURATION.fullmatch(value):
                problems.append(f"{name} must be a duration like 10m or 90s, got {value!r}")
        if self.spot_max_price and not _PRICE.fullmatch(self.spot_max_price):
            problems.append(
                f"--spot-max-price must be a price like 0.90, got {self.spot_max_price!r}"
            )
        try:
            ipaddress.IPv4Network(self.inbound_cidr)
        except ValueError:
            problems.append(
                f"--inbound-cidr must be an IPv4 network (1.2.3.0/24), got {self.inbound_cidr!r}"
            )
        if self.subnet_ids and not self.vpc_id:
            problems.append("--subnet-ids needs --vpc-id")
        if self.vpc_id and len(self.subnet_ids) < 2:
            problems.append("--vpc-id needs --subnet-ids with two subnets in different zones")
        for key, _ in self.extra_tags:
            if key.lower().startswith("aws:") or key in (CLUSTER_TAG, MANAGED_BY_TAG):
                problems.append(f"--add-tag {key!r}: reserved tag key")
        if self.master_cert_name and not self.master_tls:
            problems.append("--master-cert-name needs --master-tls-cert and --master-tls-key")
        if problems:
            raise ValueError("; ".join(problems))

    def parameters(self, wheel_key: str, version: str) -> dict[str, str]:
        """The stack's parameters (never a secret: those live in SSM, see secret_path)."""
        return {
            "VpcId": self.vpc_id,
            "SubnetIds": ",".join(self.subnet_ids),
            "InboundCidr": self.inbound_cidr,
            "KeyName": self.keypair,
            "MasterInstanceType": self.master_instance_type,
            "MasterImageId": self.ami_parameter,
            "AgentImageId": self.agent_ami_parameter,
            "AuxAgentInstanceType": self.aux_agent_instance_type,
            "ComputeAgentInstanceType": self.compute_agent_instance_type,
            "MaxDynamicAgents": str(self.max_dynamic_agents),
            "MaxAuxContainersPerAgent": str(self.max_aux_containers_per_agent),
            "Spot": "true" if self.spot else "false",
            "SpotMaxPrice": self.spot_max_price,
            "DbInstanceClass": self.db_instance_type,
            "DbAllocatedStorage": str(self.db_size),
            "MaxIdleAgentPeriod": self.max_idle_agent_period,
            "MaxAgentStartingPeriod": self.max_agent_starting_period,
            "SchedulerType": self.scheduler_type,
            "PreemptionEnabled": "true" if self.preemption_enabled else "false",
            "MasterTls": "true" if self.master_tls else "false",
            "MasterCertName": self.master_cert_name,
            "WheelKey": wheel_key,
            "ResoluteVersion": version,
        }

    def stack_tags(self) -> list[dict[str, str]]:
        """Tags on the stack, which CloudFormation copies onto the resources it makes."""
        tags = {CLUSTER_TAG: self.cluster_id, MANAGED_BY_TAG: MANAGED_BY_VALUE}
        tags.update(dict(self.extra_tags))
        return [{"Key": k, "Value": v} for k, v in tags.items()]
