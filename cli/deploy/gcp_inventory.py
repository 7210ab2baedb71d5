"""What `det deploy gcp up` creates, and roughly what it costs per hour, for `--dry-run`.

The inventory lists every resource of terraform/gcp (a test keeps the two equal) with the name
it will get. Prices are on-demand list prices in US regions (USD, late 2024), rounded: an
estimate to compare settings by, not a quote; the docs point at Google's calculator.
"""

from __future__ import annotations

from dataclasses import dataclass

from cli.deploy.gcp_config import GcpDeployment


@dataclass(frozen=True)
class Planned:
    module: str
    resource: str
    name: str


def inventory(d: GcpDeployment, *, password_given: bool = False) -> list[Planned]:
    """Every resource `up` creates; `password_given`: --db-password was set (none generated)."""
    c = d.cluster_id
    items = [
        Planned("network", "google_compute_network.cluster", d.network),
        Planned("network", "google_compute_subnetwork.cluster", f"{d.network}-{d.region}"),
        Planned("network", "google_compute_router.nat", f"{c}-router"),
        Planned("network", "google_compute_router_nat.nat", f"{c}-nat"),
        Planned(
            "network", "google_compute_global_address.private_services", f"{c}-private-services"
        ),
        Planned("network", "google_service_networking_connection.private_services", d.network),
        Planned("ip", "google_compute_address.external", f"{c}-master"),
        Planned("ip", "google_compute_address.internal", f"{c}-master-internal"),
        Planned("service_account", "google_service_account.agent", d.agent_service_account),
        Planned("service_account", "google_project_iam_member.agent_logs", "logging, monitoring"),
        Planned(
            "service_account",
            "google_service_account_iam_member.master_uses_agent_account",
            "roles/iam.serviceAccountUser",
        ),
        Planned("firewall", "google_compute_firewall.master_from_inbound", f"{c}-master-inbound"),
        Planned("firewall", "google_compute_firewall.ssh_from_inbound", f"{c}-ssh-inbound"),
        Planned("firewall", "google_compute_firewall.internal", f"{c}-internal"),
        Planned("gcs", "google_storage_bucket.checkpoints", d.checkpoint_bucket),
        Planned("gcs", "google_storage_bucket_iam_member.writers", "roles/storage.objectAdmin"),
        Planned(
            "gcs", "google_storage_bucket_iam_member.wheel_readers", f"{d.state_bucket}/wheels/"
        ),
        Planned("secret", "google_secret_manager_secret.db_password", d.db_secret_id),
        Planned("secret", "google_secret_manager_secret_version.db_password", "latest"),
        Planned(
            "secret",
            "google_secret_manager_secret_iam_member.accessor",
            "roles/secretmanager.secretAccessor",
        ),
        Planned("database", "google_sql_database_instance.master", f"{c}-db (POSTGRES_15)"),
        Planned("database", "google_sql_database.master", "resolute"),
        Planned("database", "google_sql_user.master", "resolute"),
        Planned("master", "google_compute_instance.master", d.master_name),
    ]
    if d.master_tls:
        for part, secret_id in (("cert", d.tls_cert_id), ("key", d.tls_key_id)):
            items += [
                Planned("tls_secret", f"google_secret_manager_secret.{part}", secret_id),
                Planned("tls_secret", f"google_secret_manager_secret_version.{part}", "latest"),
                Planned(
                    "tls_secret",
                    f"google_secret_manager_secret_iam_member.{part}_accessor",
                    "roles/secretmanager.secretAccessor",
                ),
            ]
    if not password_given:
        items.append(Planned("secret", "random_password.db", "32 letters and digits"))
    if not d.service_account_email:
        master_sa = f"{c}-master@{d.project_id}.iam.gserviceaccount.com"
        items += [
            Planned("service_account", "google_service_account.master", master_sa),
            Planned(
                "service_account",
                "google_project_iam_custom_role.master",
                f"resolute_master_{c.replace('-', '_')}",
            ),
            Planned(
                "service_account",
                "google_project_iam_member.master_compute",
                f"instances {d.agent_prefix}* only",
            ),
            Planned(
                "service_account", "google_project_iam_member.master_logs", "logging, monitoring"
            ),
        ]
    return items


# USD per hour.
# Per vCPU and per GB of memory (us-central1); G2 and A2 prices include their GPUs and are left
# out, so an estimate for them says "unknown" rather than a wrong figure.
_MACHINE_VCPU = {"n1": 0.031611, "n2": 0.031611, "c2": 0.03398}
_MACHINE_GB = {"n1": 0.004237, "n2": 0.004237, "c2": 0.00455}
_GB_PER_VCPU = {
    "n1": {"standard": 3.75, "highmem": 6.5, "highcpu": 0.9},
    "n2": {"standard": 4.0, "highmem": 8.0, "highcpu": 1.0},
    "c2": {"standard": 4.0},
}
_GPU = {
    "nvidia-tesla-t4": 0.35,
    "nvidia-tesla-p4": 0.60,
    "nvidia-tesla-p100": 1.46,
    "nvidia-tesla-v100": 2.48,
    "nvidia-tesla-a100": 2.93,
    "nvidia-a100-80gb": 3.93,
    "nvidia-l4": 0.56,
}
_SQL_VCPU, _SQL_GB, _SQL_DISK_GB_MONTH = 0.0413, 0.0070, 0.17
_EXTERNAL_IP, _NAT_PER_VM = 0.005, 0.0014
_HOURS_PER_MONTH = 730


def machine_hourly(machine_type: str) -> float | None:
    """List price of a predefined N1/N2/C2 type; None for one not in the table."""
    parts = machine_type.split("-")
    if len(parts) != 3 or parts[0] not in _MACHINE_VCPU or not parts[2].isdigit():
        return None
    gb = _GB_PER_VCPU[parts[0]].get(parts[1])
    if gb is None:
        return None
    vcpus = int(parts[2])
    return vcpus * (_MACHINE_VCPU[parts[0]] + gb * _MACHINE_GB[parts[0]])


def sql_hourly(tier: str, disk_gb: int) -> float | None:
    parts = tier.split("-")  # db-custom-<vcpus>-<MiB>
    if len(parts) != 4 or parts[:2] != ["db", "custom"] or not all(p.isdigit() for p in parts[2:]):
        return None
    vcpus, mib = int(parts[2]), int(parts[3])
    return (
        vcpus * _SQL_VCPU + mib / 1024 * _SQL_GB + disk_gb * _SQL_DISK_GB_MONTH / _HOURS_PER_MONTH
    )


@dataclass(frozen=True)
class Cost:
    idle: float | None
    per_compute_agent: float | None
    at_max: float | None


def hourly_cost(d: GcpDeployment) -> Cost:
    """With no agents, per compute agent, and with max agents in both pools (all on-demand)."""
    master = machine_hourly(d.master_instance_type)
    sql = sql_hourly(d.db_tier, d.db_size)
    idle = None if master is None or sql is None else master + sql + _EXTERNAL_IP + _NAT_PER_VM
    compute = machine_hourly(d.compute_agent_instance_type)
    gpu = _GPU.get(d.gpu_type) if d.gpu_num else 0.0
    agent = None if compute is None or gpu is None else compute + d.gpu_num * gpu + _NAT_PER_VM
    aux = machine_hourly(d.aux_agent_instance_type)
    at_max = None
    if idle is not None and agent is not None and aux is not None:
        at_max = idle + d.max_dynamic_agents * (agent + aux + _NAT_PER_VM)
    return Cost(idle=idle, per_compute_agent=agent, at_max=at_max)
