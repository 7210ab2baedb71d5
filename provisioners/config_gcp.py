"""`type: gcp` provider blocks: GCE keys, defaults and checks (reference §2.9, §2.7)."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from provisioners.config_common import (
    EC2_MASTER_ALIASES,
    GCE_MASTER_ALIASES,
    ProviderConfigBase,
    check_http_url,
)
from resource_pools.config_duration import GoDuration
from resource_pools.config_errors import Problem, raise_config_error

GCE_METADATA_URL = "http://metadata.google.internal"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_LABEL_VALUE = "determined-ai-determined"
RESERVED_LABELS = frozenset(
    {"determined-master-host", "determined-master-port", "determined-resource-pool"}
)
"""Labels the provisioner sets on every instance itself."""

MACHINE_TYPE_PREFIXES = (
    "n1-standard",
    "n1-highmem",
    "n1-highcpu",
    "n1-ultramem",
    "m2-ultramem",
    "n1-megamem",
    "c2-standard",
    "a2-highgpu",
    "a2-megagpu",
    "a2-ultragpu",
    "g2-standard",
    "n2-standard",
    "custom",
)
GPU_COUNTS: dict[str, frozenset[int]] = {
    "nvidia-tesla-t4": frozenset({0, 1, 2, 4}),
    "nvidia-tesla-p100": frozenset({0, 1, 2, 4}),
    "nvidia-tesla-p4": frozenset({0, 1, 2, 4}),
    "nvidia-tesla-v100": frozenset({0, 1, 2, 4, 8}),
    "nvidia-tesla-a100": frozenset({0, 1, 2, 4, 8, 16}),
    "nvidia-a100-80gb": frozenset({0, 1, 2, 4, 8}),
    "nvidia-l4": frozenset({0, 1, 2, 4, 8}),
}
"""GPU counts GCE allows per accelerator type."""

LABEL_VALUE_MAX = 30
_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
_NETWORK_TAG = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_NAME_PREFIX = re.compile(r"[a-z][-a-z0-9]*")


class GcpNetworkInterface(BaseModel):
    """The one network interface of each instance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    network: str = Field(
        "", description="VPC network, e.g. projects/P/global/networks/N; empty: the default."
    )
    subnetwork: str = Field(
        "", description="Subnetwork, e.g. projects/P/regions/R/subnetworks/S; empty: none."
    )
    external_ip: bool = Field(
        False, description="Give the instance an external IP (one-to-one NAT, premium tier)."
    )


class GcpServiceAccount(BaseModel):
    """The service account the instances run as."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    email: str = Field("", description="Service account e-mail; empty: none attached.")
    scopes: tuple[str, ...] = Field(
        (), description="OAuth scopes; default cloud-platform when an email is set."
    )

    @model_validator(mode="before")
    @classmethod
    def _default_scope(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("email") and not data.get("scopes"):
            return {**data, "scopes": (CLOUD_PLATFORM_SCOPE,)}
        return data


class GcpInstanceType(BaseModel):
    """Machine type and GPUs of each instance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    machine_type: str = Field(
        "n1-standard-32",
        description=f"GCE machine type: prefix-family-size, prefix one of "
        f"{', '.join(MACHINE_TYPE_PREFIXES)}.",
    )
    gpu_type: str = Field(
        "nvidia-tesla-t4",
        description=f"Accelerator type, one of {', '.join(GPU_COUNTS)}; may be empty when "
        "gpu_num is 0.",
    )
    gpu_num: int = Field(
        4, ge=0, description="GPUs per instance; the counts GCE allows depend on gpu_type."
    )
    preemptible: bool = Field(
        False, description="Launch preemptible VMs (reclaimed within 24 h, or at any time)."
    )

    @field_validator("machine_type")
    @classmethod
    def _machine_type_shape(cls, value: str) -> str:
        if not value.startswith(MACHINE_TYPE_PREFIXES) or len(value.split("-")) != 3:
            raise ValueError(
                f"{value!r} is not a supported machine type: write prefix-family-size "
                f"(e.g. n1-standard-8) with a prefix of {', '.join(MACHINE_TYPE_PREFIXES)}"
            )
        return value

    @model_validator(mode="after")
    def _gpu_count_allowed(self) -> GcpInstanceType:
        if self.gpu_type == "" and self.gpu_num == 0:
            return self
        counts = GPU_COUNTS.get(self.gpu_type)
        if counts is None:
            reason = f"unknown GPU type {self.gpu_type!r}; use one of {', '.join(GPU_COUNTS)}"
            raise_config_error(type(self).__name__, (("gpu_type",), reason, self.gpu_type))
        if self.gpu_num not in counts:
            allowed = ", ".join(map(str, sorted(counts)))
            reason = f"{self.gpu_type} allows {allowed} GPUs per instance, not {self.gpu_num}"
            raise_config_error(type(self).__name__, (("gpu_num",), reason, self.gpu_num))
        return self


class GcpMachineOffer(GcpInstanceType):
    """One entry of machine_types: a machine type with its GPUs, its slots and prices.

    Preemptible or spot comes from the pool (instance_type.preemptible, spot), not the entry.
    """

    slots: int | None = Field(None, ge=0, description="Slots per instance; default: gpu_num.")
    price_per_hour: float | None = Field(
        None, ge=0, description="On-demand USD per hour (GPUs included); default: price table."
    )
    spot_price_per_hour: float | None = Field(
        None, ge=0, description="Typical spot USD per hour; default: the price table's."
    )

    @field_validator("preemptible")
    @classmethod
    def _pool_decides_market(cls, value: bool) -> bool:
        if value:
            raise ValueError("set instance_type.preemptible or spot on the pool, not per entry")
        return value

    @property
    def resolved_slots(self) -> int:
        return self.slots if self.slots is not None else self.gpu_num


class GcpProviderConfig(ProviderConfigBase):
    """A pool of GCE instances, standard, preemptible or spot."""

    master_host_aliases: ClassVar[frozenset[str]] = GCE_MASTER_ALIASES
    foreign_master_aliases: ClassVar[frozenset[str]] = EC2_MASTER_ALIASES

    type: Literal["gcp"] = Field("gcp", description="The cloud: gcp.")
    project: str = Field(
        "",
        validate_default=True,
        description="GCP project. Unset: the GOOGLE_CLOUD_PROJECT environment variable of the "
        "master (Determined asks the metadata server; Resolute does not).",
    )
    zone: str = Field(
        "",
        validate_default=True,
        description="GCE zone, e.g. us-central1-a. Unset: the CLOUDSDK_COMPUTE_ZONE environment "
        "variable of the master (Determined asks the metadata server; Resolute does not).",
    )
    zones: tuple[str, ...] = Field(
        (),
        description="Resolute addition: zones to launch in (one region's); the provisioner fails "
        "over between them on ZONE_RESOURCE_POOL_EXHAUSTED or quota errors, and a gang lands in "
        "one zone. zone defaults to the first. Give zone or zones, not both.",
    )
    machine_types: tuple[GcpMachineOffer, ...] = Field(
        (),
        description="Resolute addition: several machine types the pool may launch, each "
        "{machine_type, gpu_type, gpu_num, slots, price_per_hour, spot_price_per_hour}; the first "
        "is the pool's unit size. Give instance_type's machine or machine_types, not both.",
    )
    boot_disk_size: int = Field(200, ge=100, description="Boot disk size in GB; >= 100.")
    boot_disk_source_image: str = Field(
        "projects/determined-ai/global/images/det-environments-0736b6d",
        min_length=1,
        description="Image of the boot disk; it needs python3 with pip, or an agent_install "
        "that works without.",
    )
    boot_disk_type: str = Field(
        "",
        validate_default=True,
        description="Boot disk type. Default: projects/<project>/zones/<zone>/diskTypes/"
        "pd-standard.",
    )
    label_key: str = Field(
        "managed-by", description="Key of the label that marks this master's instances."
    )
    label_value: str = Field(
        DEFAULT_LABEL_VALUE,
        description="Value of that label, at most 30 characters, not ending in '-'. Determined "
        "defaults to the master's instance name; Resolute to 'determined-ai-determined': give "
        "each master its own value.",
    )
    name_prefix: str = Field(
        f"{DEFAULT_LABEL_VALUE}-",
        description="Start of instance names (lowercase letters, digits, '-'); a random suffix "
        "follows, and the name is cut to GCE's 63 characters. Determined defaults to the "
        "master's instance name + '-'.",
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Extra labels on every instance."
    )
    network_tags: tuple[str, ...] = Field((), description="Network tags (firewall targets).")
    network_interface: GcpNetworkInterface = Field(
        default_factory=GcpNetworkInterface, description="Network, subnetwork, external IP."
    )
    service_account: GcpServiceAccount = Field(
        default_factory=GcpServiceAccount, description="Service account email and scopes."
    )
    instance_type: GcpInstanceType = Field(
        default_factory=GcpInstanceType,
        description="machine_type, gpu_type, gpu_num and preemptible.",
    )
    operation_timeout_period: GoDuration = Field(
        timedelta(minutes=5),
        description="Deadline for all polls of one batch of zone operations; > 0.",
    )
    cpu_slots_allowed: bool = Field(
        False, description="An instance with no GPU gives 1 CPU slot instead of none."
    )
    use_cloud_logging: bool = Field(False, description="Send the agent's logs to Cloud Logging.")
    base_config: dict[str, Any] | None = Field(
        None, description="GCE InstanceProperties the provisioner's own settings are merged over."
    )
    spot: bool = Field(
        False,
        description="Resolute addition: launch Spot VMs (provisioning model SPOT, deleted when "
        "reclaimed). Do not combine with instance_type.preemptible.",
    )
    api_endpoint: str | None = Field(
        None,
        description="Resolute addition: Compute API endpoint, e.g. http://127.0.0.1:PORT for a "
        "fake. Unset: compute.googleapis.com.",
    )
    metadata_url: str = Field(
        GCE_METADATA_URL,
        description="Resolute addition: GCE metadata-server base URL that dynamic agents read "
        "(instance name, instance/preempted). Used only on the instances.",
    )

    @model_validator(mode="before")
    @classmethod
    def _zone_from_zones(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("zones") and not data.get("zone"):
            zones = data["zones"]
            if isinstance(zones, list | tuple) and isinstance(zones[0], str):
                return {**data, "zone": zones[0]}
        return data

    @field_validator("project", "zone")
    @classmethod
    def _from_environment(cls, value: str, info: ValidationInfo) -> str:
        variable = {"project": "GOOGLE_CLOUD_PROJECT", "zone": "CLOUDSDK_COMPUTE_ZONE"}
        env = variable[info.field_name or ""]
        value = value or os.environ.get(env, "")
        if not value.strip():
            raise ValueError(f"required off GCE: set {info.field_name}, or {env} on the master")
        return value

    @field_validator("boot_disk_type")
    @classmethod
    def _disk_type_default(cls, value: str, info: ValidationInfo) -> str:
        if value:
            return value
        project, zone = info.data.get("project"), info.data.get("zone")
        if not project or not zone:
            return value  # project or zone has its own error
        return f"projects/{project}/zones/{zone}/diskTypes/pd-standard"

    @field_validator("label_key")
    @classmethod
    def _label_key_shape(cls, value: str) -> str:
        return _check_label_key(value)

    @field_validator("label_value")
    @classmethod
    def _label_value_shape(cls, value: str) -> str:
        if not value or len(value) > LABEL_VALUE_MAX or value.endswith("-"):
            raise ValueError(
                f"must be 1 to {LABEL_VALUE_MAX} characters and not end in '-', got {value!r}"
            )
        return _check_label_value(value)

    @field_validator("name_prefix")
    @classmethod
    def _name_prefix_shape(cls, value: str) -> str:
        if not _NAME_PREFIX.fullmatch(value):
            raise ValueError(
                f"must start with a lowercase letter and hold only lowercase letters, digits "
                f"and '-', got {value!r}"
            )
        return value

    @field_validator("network_tags")
    @classmethod
    def _network_tags_shape(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for tag in value:
            if not _NETWORK_TAG.fullmatch(tag):
                raise ValueError(
                    f"network tag {tag!r}: 1 to 63 lowercase letters, digits and '-', starting "
                    "with a letter and not ending in '-'"
                )
        return value

    @field_validator("operation_timeout_period")
    @classmethod
    def _operation_timeout_positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be greater than 0, e.g. '5m'")
        return value

    @field_validator("api_endpoint")
    @classmethod
    def _endpoint_shape(cls, value: str | None) -> str | None:
        return None if value is None else check_http_url(value, "api_endpoint")

    @model_validator(mode="after")
    def _labels_and_scheduling(self) -> GcpProviderConfig:
        problems: list[Problem] = []
        reserved = RESERVED_LABELS | {self.label_key}
        for key, value in self.labels.items():
            where = ("labels", key)
            try:
                _check_label_key(key)
                _check_label_value(value)
            except ValueError as exc:
                problems.append((where, str(exc), value))
            if key in reserved:
                problems.append((where, f"the provisioner sets the label {key!r} itself", value))
        if self.spot and self.instance_type.preemptible:
            reason = "spot and instance_type.preemptible exclude each other: choose one"
            problems.append((("spot",), reason, self.spot))
        if self.zones and self.zone not in self.zones:
            reason = f"zone {self.zone!r} is not one of zones; give zone or zones, not both"
            problems.append((("zones",), reason, self.zones))
        if len(set(self.zones)) != len(self.zones):
            problems.append((("zones",), "a zone is listed twice", self.zones))
        if self.machine_types and "machine_type" in self.instance_type.model_fields_set:
            reason = "give instance_type.machine_type or machine_types, not both"
            problems.append((("machine_types",), reason, self.instance_type.machine_type))
        if problems:
            raise_config_error(type(self).__name__, *problems)
        return self

    @property
    def offer_types(self) -> tuple[GcpMachineOffer, ...]:
        """The machine types the pool may launch: machine_types, or instance_type's one."""
        if self.machine_types:
            return self.machine_types
        kind = self.instance_type
        return (
            GcpMachineOffer(
                machine_type=kind.machine_type, gpu_type=kind.gpu_type, gpu_num=kind.gpu_num
            ),
        )

    @property
    def offer_zones(self) -> tuple[str, ...]:
        return self.zones or (self.zone,)

    @property
    def is_spot(self) -> bool:
        """Instances may be reclaimed by the cloud (spot or preemptible)."""
        return self.spot or self.instance_type.preemptible


def _check_label_key(key: str) -> str:
    if not _LABEL_KEY.fullmatch(key):
        raise ValueError(
            f"label key {key!r}: 1 to 63 lowercase letters, digits, '_' and '-', starting with "
            "a letter"
        )
    return key


def _check_label_value(value: str) -> str:
    if not _LABEL_VALUE.fullmatch(value):
        raise ValueError(
            f"label value {value!r}: at most 63 lowercase letters, digits, '_' and '-'"
        )
    return value
