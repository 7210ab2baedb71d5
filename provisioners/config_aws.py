"""`type: aws` provider blocks: EC2 keys, defaults and checks (reference §2.9, §2.6)."""

from __future__ import annotations

import os
import re
from decimal import Decimal
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from provisioners.config_common import (
    EC2_MASTER_ALIASES,
    GCE_MASTER_ALIASES,
    ProviderConfigBase,
    check_http_url,
)
from resource_pools.config_errors import Problem, raise_config_error

AWS_METADATA_URL = "http://169.254.169.254"
SPOT_PRICE_ON_DEMAND = "OnDemand"
"""The spot_max_price placeholder: no price is sent, so AWS caps spot at the on-demand price."""

DEFAULT_TAG_VALUE = "determined-ai-determined"
RESOURCE_POOL_TAG = "determined-resource-pool"
MASTER_ADDRESS_TAG = "determined-master-address"

_GPU_SLOTS: dict[str, int] = {
    **dict.fromkeys(
        ["g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge", "g4dn.8xlarge", "g4dn.16xlarge"], 1
    ),
    "g4dn.12xlarge": 4,
    "g4dn.metal": 8,
    **dict.fromkeys(["g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge", "g5.16xlarge"], 1),
    "g5.12xlarge": 4,
    "g5.24xlarge": 4,
    "g5.48xlarge": 8,
    "p2.xlarge": 1,
    "p2.8xlarge": 8,
    "p2.16xlarge": 16,
    "p3.2xlarge": 1,
    "p3.8xlarge": 4,
    "p3.16xlarge": 8,
    "p3dn.24xlarge": 8,
    "p4d.24xlarge": 8,
}
CPU_ONLY_FAMILIES = frozenset(
    {"t2", "t3", "c4", "c5", "c5d", "c5n", "m4", "m5", "m5d", "m5dn", "m5n", "m5zn", "m6i"}
)
"""Instance families with no GPU: every size of them has 0 slots (1 with cpu_slots_allowed)."""

_SPOT_PRICE = re.compile(r"\d*\.?\d*")
_SIZE = re.compile(r"[a-z0-9]+")


def aws_instance_type_slots(instance_type: str) -> int | None:
    """GPU slots of a known EC2 instance type (0 for the CPU-only families); None if unknown."""
    if instance_type in _GPU_SLOTS:
        return _GPU_SLOTS[instance_type]
    family, dot, size = instance_type.partition(".")
    if dot and family in CPU_ONLY_FAMILIES and _SIZE.fullmatch(size):
        return 0
    return None


def _is_price(text: str) -> bool:
    return bool(_SPOT_PRICE.fullmatch(text)) and any(c.isdigit() for c in text)


def known_aws_instance_types() -> list[str]:
    """The GPU types of the slot table, then the CPU-only families as 'family.*'."""
    return [*_GPU_SLOTS, *(f"{family}.*" for family in sorted(CPU_ONLY_FAMILIES))]


class AwsNetworkInterface(BaseModel):
    """The one network interface of each instance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    public_ip: bool = Field(True, description="Give the instance a public IP address.")
    subnet_id: str = Field("", description="Subnet to launch in; empty: the default subnet.")
    subnet_ids: tuple[str, ...] = Field(
        (),
        description="Resolute addition: subnets to launch in, each in one availability zone; "
        "the provisioner fails over between them on capacity errors. Give subnet_id or "
        "subnet_ids, not both.",
    )
    security_group_id: str = Field(
        "", description="Security group of the interface; empty: the VPC's default group."
    )


class AwsInstanceTypeOffer(BaseModel):
    """One entry of instance_types: a type the pool may launch, its slots and prices."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = Field(min_length=1, description="EC2 instance type, e.g. g5.xlarge.")
    slots: int | None = Field(
        None, ge=0, description="Slots per instance; default: the known slot table's."
    )
    price_per_hour: float | None = Field(
        None, ge=0, description="On-demand USD per hour; default: the price table's."
    )
    spot_price_per_hour: float | None = Field(
        None, ge=0, description="Typical spot USD per hour; default: the price table's."
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"type": data} if isinstance(data, str) else data

    @property
    def resolved_slots(self) -> int | None:
        return self.slots if self.slots is not None else aws_instance_type_slots(self.type)


class AwsTag(BaseModel):
    """One entry of custom_tags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(min_length=1, max_length=128, description="Tag key; not starting 'aws:'.")
    value: str = Field("", max_length=256, description="Tag value.")

    @field_validator("key")
    @classmethod
    def _not_reserved_prefix(cls, value: str) -> str:
        if value.lower().startswith("aws:"):
            raise ValueError("tag keys starting with 'aws:' are reserved by AWS")
        return value


class AwsProviderConfig(ProviderConfigBase):
    """A pool of EC2 instances, on-demand or one-time spot."""

    master_host_aliases: ClassVar[frozenset[str]] = EC2_MASTER_ALIASES
    foreign_master_aliases: ClassVar[frozenset[str]] = GCE_MASTER_ALIASES

    type: Literal["aws"] = Field("aws", description="The cloud: aws.")
    region: str = Field(
        "",
        validate_default=True,
        description="EC2 region. Unset: the AWS_DEFAULT_REGION environment variable of the "
        "master (Determined would ask the master's instance metadata first; Resolute does not).",
    )
    root_volume_size: int = Field(200, ge=100, description="Root EBS volume (gp2) in GiB; >= 100.")
    image_id: str = Field(
        min_length=1,
        description="AMI of the instances; required (Determined's per-region AMI table carries "
        "its own agent, so Resolute has no default). It needs python3 with pip, or an "
        "agent_install that works without.",
    )
    tag_key: str = Field(
        "managed_by",
        min_length=1,
        description="Key of the tag that marks this master's instances (Determined's code "
        "default; its docs say managed-by).",
    )
    tag_value: str = Field(
        DEFAULT_TAG_VALUE,
        min_length=1,
        description="Value of that tag. Determined defaults to the master's EC2 instance ID; "
        "Resolute to 'determined-ai-determined': give each master its own value.",
    )
    instance_name: str = Field(
        "determined-ai-agent", description="The instances' Name tag, shown in the EC2 console."
    )
    ssh_key_name: str = Field(description="EC2 key pair the instances accept; required.")
    network_interface: AwsNetworkInterface = Field(
        default_factory=AwsNetworkInterface, description="Public IP, subnet and security group."
    )
    iam_instance_profile_arn: str = Field(
        "", description="IAM instance profile given to the instances; empty: none."
    )
    instance_type: str = Field(
        "g4dn.metal",
        description="EC2 instance type; must be in the known slot table unless instance_slots "
        "is given.",
    )
    instance_slots: int | None = Field(
        None,
        ge=0,
        description="Slots per instance, for a type outside the table (or to override it).",
    )
    instance_types: tuple[AwsInstanceTypeOffer, ...] = Field(
        (),
        description="Resolute addition: several instance types the pool may launch, each "
        "'g5.xlarge' or {type, slots, price_per_hour, spot_price_per_hour}; ranked by price "
        "per slot with failover on capacity errors. The first is the pool's unit size. Give "
        "instance_type or instance_types, not both.",
    )
    log_group: str = Field("", description="CloudWatch log group of the agent's logs; optional.")
    log_stream: str = Field("", description="CloudWatch log stream of the agent's logs.")
    spot: bool = Field(False, description="Launch one-time spot instances instead of on-demand.")
    spot_max_price: str = Field(
        SPOT_PRICE_ON_DEMAND,
        description="Highest hourly spot price in USD, digits with at most one decimal point "
        "('0.90'). Unset or empty: the placeholder 'OnDemand', and no price is sent, so AWS "
        "caps the price at the on-demand price.",
    )
    custom_tags: tuple[AwsTag, ...] = Field(
        (),
        description="Extra tags [{key, value}] on every instance; keys must not clash with the "
        "tags the provisioner sets (Name, tag_key, determined-resource-pool, "
        "determined-master-address).",
    )
    cpu_slots_allowed: bool = Field(
        False, description="A type with no GPU gives 1 CPU slot instead of none."
    )
    endpoint_url: str | None = Field(
        None,
        description="Resolute addition: EC2 API endpoint, e.g. a moto server. Unset: boto3's "
        "own choice (the region's endpoint, or AWS_ENDPOINT_URL).",
    )
    metadata_url: str = Field(
        AWS_METADATA_URL,
        description="Resolute addition: EC2 instance-metadata base URL that dynamic agents read "
        "(IMDSv2; instance ID, spot/instance-action). Used only on the instances.",
    )

    @model_validator(mode="before")
    @classmethod
    def _empty_price_is_on_demand(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("spot_max_price") == "":
            return {**data, "spot_max_price": SPOT_PRICE_ON_DEMAND}
        return data

    @field_validator("region")
    @classmethod
    def _region_or_environment(cls, value: str) -> str:
        value = value or os.environ.get("AWS_DEFAULT_REGION", "")
        if not value.strip():
            raise ValueError("required off EC2: set region, or AWS_DEFAULT_REGION on the master")
        return value

    @field_validator("ssh_key_name")
    @classmethod
    def _key_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty: name an EC2 key pair")
        return value

    @field_validator("spot_max_price", mode="before")
    @classmethod
    def _price_shape(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = format(Decimal(repr(value)), "f")  # YAML reads 0.90 as a float
        if isinstance(value, str) and value != SPOT_PRICE_ON_DEMAND and not _is_price(value):
            raise ValueError(
                f"must be a price of digits with at most one decimal point (e.g. '0.90'), "
                f"or left out for the on-demand price; got {value!r}"
            )
        return value

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint_shape(cls, value: str | None) -> str | None:
        return None if value is None else check_http_url(value, "endpoint_url")

    @model_validator(mode="after")
    def _type_and_tags(self) -> AwsProviderConfig:
        problems: list[Problem] = []
        problems.extend(self._offer_problems())
        unknown = (
            self.instance_slots is None and aws_instance_type_slots(self.instance_type) is None
        )
        if not self.instance_types and unknown:
            reason = (
                f"unknown instance type {self.instance_type!r}: set instance_slots for it, or "
                f"use one of {', '.join(known_aws_instance_types())}"
            )
            problems.append((("instance_type",), reason, self.instance_type))
        reserved = {"Name", self.tag_key, RESOURCE_POOL_TAG, MASTER_ADDRESS_TAG}
        seen: set[str] = set()
        for index, tag in enumerate(self.custom_tags):
            if tag.key in reserved:
                reason = f"the provisioner sets the tag {tag.key!r} itself"
                problems.append((("custom_tags", index, "key"), reason, tag.key))
            elif tag.key in seen:
                problems.append((("custom_tags", index, "key"), "duplicate tag key", tag.key))
            seen.add(tag.key)
        if problems:
            raise_config_error(type(self).__name__, *problems)
        return self

    def _offer_problems(self) -> list[Problem]:
        problems: list[Problem] = []
        given = self.model_fields_set
        if self.instance_types and "instance_type" in given:
            reason = "give instance_type or instance_types, not both"
            problems.append((("instance_types",), reason, self.instance_type))
        if self.instance_types and "instance_slots" in given:
            reason = "with instance_types, give each entry its slots instead"
            problems.append((("instance_slots",), reason, self.instance_slots))
        seen: set[str] = set()
        for index, entry in enumerate(self.instance_types):
            if entry.type in seen:
                problems.append((("instance_types", index, "type"), "listed twice", entry.type))
            seen.add(entry.type)
            if entry.resolved_slots is None:
                reason = f"unknown instance type {entry.type!r}: give its slots"
                problems.append((("instance_types", index, "slots"), reason, entry.type))
        nic = self.network_interface
        if nic.subnet_id and nic.subnet_ids:
            reason = "give subnet_id or subnet_ids, not both"
            problems.append((("network_interface", "subnet_ids"), reason, nic.subnet_ids))
        if len(set(nic.subnet_ids)) != len(nic.subnet_ids):
            reason = "a subnet is listed twice"
            problems.append((("network_interface", "subnet_ids"), reason, nic.subnet_ids))
        return problems

    @property
    def offer_types(self) -> tuple[AwsInstanceTypeOffer, ...]:
        """The types the pool may launch: instance_types, or the one instance_type."""
        if self.instance_types:
            return self.instance_types
        return (AwsInstanceTypeOffer(type=self.instance_type, slots=self.instance_slots),)

    @property
    def subnets(self) -> tuple[str, ...]:
        """Where the pool may launch: subnet_ids, or the one subnet_id ('' = default subnet)."""
        nic = self.network_interface
        return nic.subnet_ids or (nic.subnet_id,)

    @property
    def spot_price_to_send(self) -> str | None:
        """The SpotPrice to put on the request; None for the on-demand placeholder."""
        return None if self.spot_max_price == SPOT_PRICE_ON_DEMAND else self.spot_max_price

    @property
    def is_spot(self) -> bool:
        """Instances may be reclaimed by the cloud (and capacity may be unavailable)."""
        return self.spot
