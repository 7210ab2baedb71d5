"""`det deploy gcp`: the deployment's settings, and the Terraform variables made from them.

`GcpDeployment.tfvars()` returns exactly the root module's variables (terraform/gcp/
variables.tf) but `db_password`, which goes to Terraform through the environment
(`TF_VAR_db_password`) so that neither the variables file nor the state bucket's copy of it
holds the password. Names derived from the cluster id (buckets, service accounts, the
secret) are computed here and in terraform/gcp/main.tf the same way; tests keep them equal.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from cli.deploy.gcp_template import TemplateValue

SECRET_VARIABLES = frozenset({"db_password", "master_tls_cert", "master_tls_key"})
"""Root variables passed through the environment, never written to a file."""

CLUSTER_ID = re.compile(r"[a-z]([-a-z0-9]{0,20}[a-z0-9])?")
PROJECT_ID = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")
_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
_DURATION = re.compile(r"(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+")
SCHEDULERS = ("fair_share", "priority", "round_robin")
WHEELS_PREFIX = "wheels/"
AGENTS_LABEL = "resolute-agents"
CLUSTER_LABEL = "resolute-cluster"
ROLE_LABEL = "resolute-role"
STATE_PREFIX = "terraform/state"
VARIABLES_OBJECT = "terraform/terraform.tfvars.json"
KNOWN_AFTER_APPLY = "(known after apply)"


class DeployConfigError(ValueError):
    """A setting the deployment cannot use; the message says which and why."""


@dataclass(frozen=True)
class GcpDeployment:
    """What `det deploy gcp up` was asked for (Determined's flags and defaults, §8.2)."""

    cluster_id: str
    project_id: str
    region: str = "us-west1"
    zone: str = ""
    network: str = ""
    subnetwork_cidr: str = "10.10.0.0/20"
    inbound_cidr: str = "0.0.0.0/0"
    master_instance_type: str = "n1-standard-2"
    master_port: int = 8080
    master_image: str = "debian-cloud/debian-12"
    aux_agent_instance_type: str = "n1-standard-4"
    compute_agent_instance_type: str = "n1-standard-32"
    gpu_type: str = "nvidia-tesla-t4"
    gpu_num: int = 4
    agent_image: str = "projects/determined-ai/global/images/det-environments-0736b6d"
    min_dynamic_agents: int = 0
    max_dynamic_agents: int = 5
    max_aux_containers_per_agent: int = 16
    max_idle_agent_period: str = "10m"
    max_agent_starting_period: str = "20m"
    preemptible: bool = False
    scheduler_type: str = "fair_share"
    preemption_enabled: bool = False
    service_account_email: str = ""
    db_tier: str = "db-custom-1-3840"
    db_size: int = 20
    allow_data_deletion: bool = False
    state_bucket: str = ""
    resolute_wheel: str = ""
    resolute_version: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    master_tls: bool = False
    master_cert_name: str = ""

    def __post_init__(self) -> None:
        # Determined's defaults that depend on other flags.
        if not self.zone:
            object.__setattr__(self, "zone", f"{self.region}-b")
        if not self.network:
            object.__setattr__(self, "network", f"{self.cluster_id}-net")
        if not self.state_bucket:
            object.__setattr__(self, "state_bucket", default_state_bucket(self))
        problems = _problems(self)
        if problems:
            raise DeployConfigError("; ".join(problems))

    # -- names terraform/gcp/main.tf derives the same way -------------------------------------

    @property
    def checkpoint_bucket(self) -> str:
        return f"{self.cluster_id}-{self.project_id}-ckpt"

    @property
    def master_name(self) -> str:
        return f"{self.cluster_id}-master"

    @property
    def agent_prefix(self) -> str:
        return f"{self.cluster_id}-agent-"

    @property
    def agent_service_account(self) -> str:
        return f"{self.cluster_id}-agent@{self.project_id}.iam.gserviceaccount.com"

    @property
    def db_secret_id(self) -> str:
        return f"{self.cluster_id}-db-password"

    @property
    def tls_cert_id(self) -> str:
        return f"{self.cluster_id}-master-tls-cert"

    @property
    def tls_key_id(self) -> str:
        return f"{self.cluster_id}-master-tls-key"

    # -- what Terraform gets -------------------------------------------------------------------

    def tfvars(self) -> dict[str, Any]:
        """The variables file: every root variable but the secret ones."""
        return {key: value for key, value in asdict(self).items() if key not in SECRET_VARIABLES}

    def master_config_variables(self, db_host: str, master_internal_ip: str) -> dict[str, Any]:
        """modules/master/main.tf's `master_config_vars`, with Terraform's outputs given."""
        return {
            "cluster_id": self.cluster_id,
            "project_id": self.project_id,
            "region": self.region,
            "zone": self.zone,
            "master_port": self.master_port,
            "master_internal_ip": master_internal_ip,
            "network": self.network,
            "subnetwork": f"{self.network}-{self.region}",
            "agent_service_account_email": self.agent_service_account,
            "agent_tag": f"resolute-agent-{self.cluster_id}",
            "agent_prefix": self.agent_prefix,
            "agents_label": AGENTS_LABEL,
            "bucket": self.checkpoint_bucket,
            "state_bucket": self.state_bucket,
            "resolute_wheel": self.resolute_wheel,
            "db_host": db_host,
            "db_name": "resolute",
            "db_user": "resolute",
            "aux_agent_instance_type": self.aux_agent_instance_type,
            "compute_agent_instance_type": self.compute_agent_instance_type,
            "gpu_type": self.gpu_type,
            "gpu_num": self.gpu_num,
            "agent_image": self.agent_image,
            "min_dynamic_agents": self.min_dynamic_agents,
            "max_dynamic_agents": self.max_dynamic_agents,
            "max_aux_containers_per_agent": self.max_aux_containers_per_agent,
            "max_idle_agent_period": self.max_idle_agent_period,
            "max_agent_starting_period": self.max_agent_starting_period,
            "preemptible": self.preemptible,
            "scheduler_type": self.scheduler_type,
            "preemption_enabled": self.preemption_enabled,
            "master_scheme": "https" if self.master_tls else "http",
            "master_cert_name": self.master_cert_name,
        }

    def startup_variables(self) -> dict[str, TemplateValue]:
        """modules/master/main.tf's `startup_vars`, but for the nested master config."""
        return {
            "project_id": self.project_id,
            "state_bucket": self.state_bucket,
            "resolute_wheel": self.resolute_wheel,
            "resolute_version": self.resolute_version,
            "db_secret_id": self.db_secret_id,
            "master_port": self.master_port,
            "master_tls": self.master_tls,
            "tls_cert_id": self.tls_cert_id if self.master_tls else "",
            "tls_key_id": self.tls_key_id if self.master_tls else "",
        }


def default_state_bucket(deployment: GcpDeployment) -> str:
    return f"{deployment.cluster_id}-{deployment.project_id}-tfstate"


def parse_labels(pairs: list[str]) -> dict[str, str]:
    """`--add-label key=value` options as a map (GCE's label rules are checked later)."""
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise DeployConfigError(f"--add-label {pair!r}: write key=value")
        labels[key] = value
    return labels


def _problems(d: GcpDeployment) -> list[str]:
    problems: list[str] = []
    if not CLUSTER_ID.fullmatch(d.cluster_id):
        problems.append(
            f"--cluster-id {d.cluster_id!r}: use 1-22 lowercase letters, digits or '-', starting "
            "with a letter and not ending with '-' (it names buckets and service accounts)"
        )
    if not PROJECT_ID.fullmatch(d.project_id):
        problems.append(f"--project-id {d.project_id!r} is not a GCP project id")
    if not d.zone.startswith(f"{d.region}-"):
        problems.append(f"--zone {d.zone!r} is not in --region {d.region!r}")
    for flag, cidr in (
        ("--inbound-cidr", d.inbound_cidr),
        ("--subnetwork-cidr", d.subnetwork_cidr),
    ):
        try:
            ipaddress.ip_network(cidr)
        except ValueError as exc:
            problems.append(f"{flag} {cidr!r}: {exc}")
    if not 1 <= d.master_port <= 65535:
        problems.append(f"--port {d.master_port} is not a TCP port")
    if d.min_dynamic_agents < 0 or d.max_dynamic_agents < 1:
        problems.append("--min-dynamic-agents must be >= 0 and --max-dynamic-agents >= 1")
    elif d.min_dynamic_agents > d.max_dynamic_agents:
        problems.append("--min-dynamic-agents is above --max-dynamic-agents")
    if d.max_aux_containers_per_agent < 0:
        problems.append("--max-aux-containers-per-agent must be >= 0")
    if d.gpu_num < 0:
        problems.append("--gpu-num must be >= 0")
    for flag, value in (
        ("--max-idle-agent-period", d.max_idle_agent_period),
        ("--max-agent-starting-period", d.max_agent_starting_period),
    ):
        if not _DURATION.fullmatch(value):
            problems.append(f"{flag} {value!r}: write a Go duration such as 10m or 1h30m")
    if d.scheduler_type not in SCHEDULERS:
        problems.append(f"--scheduler-type must be one of {', '.join(SCHEDULERS)}")
    elif d.preemption_enabled and d.scheduler_type != "priority":
        problems.append("--preemption-enabled needs --scheduler-type priority")
    if d.master_cert_name and not d.master_tls:
        problems.append("--master-cert-name needs --master-tls-cert and --master-tls-key")
    if d.db_size < 10:
        problems.append("--db-size must be at least 10 (GB, Cloud SQL's minimum)")
    for key, value in d.labels.items():
        if not _LABEL_KEY.fullmatch(key) or not _LABEL_VALUE.fullmatch(value):
            problems.append(f"--add-label {key}={value}: not a valid GCP label")
        if key in (CLUSTER_LABEL, AGENTS_LABEL, ROLE_LABEL):
            problems.append(f"--add-label {key}: that label is Resolute's own")
    return problems
