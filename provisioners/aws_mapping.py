"""Pure pieces of the AWS provisioner: what a launch asks EC2 for, and what a listing means.

Everything here works on plain values and the dicts boto3 sends and receives, so it can be tested
without a cloud; only `provisioners.aws_ec2` imports boto3 (reference §2.5 on-demand, §2.6 spot).
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from provisioners.base import Instance, InstanceState, LaunchFailureKind

NAME_TAG = "Name"
POOL_TAG = "determined-resource-pool"
MASTER_ADDRESS_TAG = "determined-master-address"
# Not in Determined: it lets a repeated launch find what the first call made, also where EC2's
# ClientToken cannot help (a spot request's ValidFrom differs on every call).
REQUEST_TAG = "determined-launch-request"
SPOT_REQUEST_PREFIX = "sir-"
SPOT_PRICE_PLACEHOLDER = "OnDemand"  # Determined's "no maximum": AWS caps at the on-demand price

# Listed so the decider sees them go; terminated instances are simply gone.
LISTED_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
_STATES = {
    "pending": InstanceState.STARTING,
    "running": InstanceState.RUNNING,
    "stopping": InstanceState.STOPPING,
    "stopped": InstanceState.STOPPED,
    "shutting-down": InstanceState.TERMINATING,
}

# Spot request statuses that mean the request will not be fulfilled until the user acts.
SPOT_PROBLEM_STATUSES = frozenset(
    {
        "capacity-not-available",
        "price-too-low",
        "bad-parameters",
        "constraint-not-fulfillable",
        "limit-exceeded",
    }
)
SPOT_CANCELED_RUNNING = "request-canceled-and-instance-running"


_MAX_CLIENT_TOKEN = 64  # EC2's limit on ClientToken
_SPOT_PRICE = re.compile(r"^(?=.*[0-9])[0-9]*\.?[0-9]*$")

_CAPACITY_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientCapacity",
        "InsufficientHostCapacity",
        "InsufficientReservedInstanceCapacity",
        "InsufficientFreeAddressesInSubnet",
    }
)
_PRICE_CODES = frozenset({"SpotMaxPriceTooLow"})
_QUOTA_CODES = frozenset(
    {
        "InstanceLimitExceeded",
        "VcpuLimitExceeded",
        "MaxSpotInstanceCountExceeded",
        "ResourceLimitExceeded",
        "VolumeLimitExceeded",
        "AddressLimitExceeded",
        "NetworkInterfaceLimitExceeded",
    }
)
_TRANSIENT_CODES = frozenset(
    {
        "RequestLimitExceeded",
        "Throttling",
        "ThrottlingException",
        "ServiceUnavailable",
        "Unavailable",
        "InternalError",
        "InternalFailure",
        "RequestTimeout",
        "RequestExpired",
        "IdempotentParameterMismatch",
    }
)


@dataclass(frozen=True)
class Ec2LaunchSpec:
    """What every instance of a pool is launched with (reference §2.5); count and token aside."""

    instance_type: str
    image_id: str
    ssh_key_name: str
    user_data: str  # the rendered agent start-up script, as text
    root_volume_size: int = 200
    public_ip: bool = True
    subnet_id: str = ""
    security_group_id: str = ""
    iam_instance_profile_arn: str = ""


def launch_tags(
    *,
    instance_name: str,
    tag_key: str,
    tag_value: str,
    pool: str,
    master_address: str,
    custom_tags: Mapping[str, str],
) -> dict[str, str]:
    """The tags every instance (and spot request) of the pool carries; custom tags come last."""
    return {
        NAME_TAG: instance_name,
        tag_key: tag_value,
        POOL_TAG: pool,
        MASTER_ADDRESS_TAG: master_address,
        **custom_tags,
    }


def tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def scope_filters(tag_key: str, tag_value: str, pool: str) -> list[dict[str, Any]]:
    """The tag filters that make a describe call see this pool's resources only."""
    return [
        {"Name": f"tag:{tag_key}", "Values": [tag_value]},
        {"Name": f"tag:{POOL_TAG}", "Values": [pool]},
    ]


def client_token(request_id: str) -> str:
    """EC2's idempotency token for a launch: the request id, hashed when it is too long."""
    if len(request_id) <= _MAX_CLIENT_TOKEN and request_id.isascii():
        return request_id
    return hashlib.sha256(request_id.encode()).hexdigest()


def _network_interface(spec: Ec2LaunchSpec) -> dict[str, Any]:
    nic: dict[str, Any] = {
        "DeviceIndex": 0,
        "AssociatePublicIpAddress": spec.public_ip,
        "DeleteOnTermination": True,
    }
    if spec.subnet_id:
        nic["SubnetId"] = spec.subnet_id
    if spec.security_group_id:
        nic["Groups"] = [spec.security_group_id]
    return nic


def _common_launch_fields(spec: Ec2LaunchSpec) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "ImageId": spec.image_id,
        "InstanceType": spec.instance_type,
        "KeyName": spec.ssh_key_name,
        "BlockDeviceMappings": [
            {
                "DeviceName": "/dev/sda1",
                "Ebs": {
                    "VolumeSize": spec.root_volume_size,
                    "VolumeType": "gp2",
                    "DeleteOnTermination": True,
                },
            }
        ],
        "NetworkInterfaces": [_network_interface(spec)],
    }
    if spec.iam_instance_profile_arn:
        fields["IamInstanceProfile"] = {"Arn": spec.iam_instance_profile_arn}
    return fields


# The agent runs in a bridged container, one hop further from the metadata service.
METADATA_OPTIONS = {
    "HttpTokens": "required",
    "HttpPutResponseHopLimit": 2,
    "HttpEndpoint": "enabled",
}


def run_instances_request(
    spec: Ec2LaunchSpec, tags: Mapping[str, str], count: int, token: str
) -> dict[str, Any]:
    """RunInstances arguments for an on-demand launch of up to `count` instances."""
    return {
        **_common_launch_fields(spec),
        "MinCount": 1,
        "MaxCount": count,
        "ClientToken": token,
        # boto3 base64-encodes RunInstances user data itself.
        "UserData": spec.user_data,
        "InstanceInitiatedShutdownBehavior": "terminate",
        "MetadataOptions": dict(METADATA_OPTIONS),
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tag_list(tags)}],
    }


def spot_launch_specification(spec: Ec2LaunchSpec) -> dict[str, Any]:
    """The LaunchSpecification of a spot request; it has no metadata options or shutdown mode."""
    return {
        **_common_launch_fields(spec),
        # Unlike RunInstances, boto3 sends this one as given, and EC2 wants base64.
        "UserData": base64.b64encode(spec.user_data.encode()).decode("ascii"),
    }


def spot_request(
    spec: Ec2LaunchSpec,
    tags: Mapping[str, str],
    count: int,
    *,
    token: str | None,
    valid_from: datetime,
    max_price: str | None,
) -> dict[str, Any]:
    """RequestSpotInstances arguments for a one-time request of `count` instances."""
    request: dict[str, Any] = {
        "InstanceCount": count,
        "Type": "one-time",
        "InstanceInterruptionBehavior": "terminate",
        "ValidFrom": valid_from,
        "LaunchSpecification": spot_launch_specification(spec),
    }
    if token is not None:
        request["ClientToken"] = token
    if tags:
        request["TagSpecifications"] = [
            {"ResourceType": "spot-instances-request", "Tags": tag_list(tags)}
        ]
    if max_price is not None:
        request["SpotPrice"] = max_price
    return request


def normalize_spot_price(price: str | None) -> str | None:
    """None for "no maximum" (unset or Determined's placeholder); a price must be a decimal."""
    if price is None or price in ("", SPOT_PRICE_PLACEHOLDER):
        return None
    if not _SPOT_PRICE.match(price):
        raise ValueError(f"spot_max_price must be digits with at most one decimal point: {price!r}")
    return price


def utc(value: datetime) -> datetime:
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def instance_from_ec2(described: Mapping[str, Any]) -> Instance | None:
    """A DescribeInstances entry as the decider sees it; None for a terminated instance."""
    state = _STATES.get(described["State"]["Name"])
    if state is None:
        return None
    instance_id = described["InstanceId"]
    return Instance(
        id=instance_id,
        agent_name=instance_id,  # the start-up script registers the agent under this id
        state=state,
        launch_time=utc(described["LaunchTime"]),
        spot=described.get("InstanceLifecycle") == "spot",
    )


def spot_problem(request: Mapping[str, Any]) -> str | None:
    """The status of a spot request that the user must act on, with AWS's explanation."""
    status = request.get("Status") or {}
    code = status.get("Code")
    if code not in SPOT_PROBLEM_STATUSES:
        return None
    message = status.get("Message")
    return f"{code}: {message}" if message else code


def pseudo_instance(
    request_id: str,
    created: datetime,
    *,
    problem: str | None = None,
    state: InstanceState = InstanceState.SPOT_REQUEST_PENDING,
) -> Instance:
    """An unfulfilled spot request standing for the instance it may become."""
    return Instance(
        id=request_id,
        agent_name=request_id,
        state=state,
        launch_time=utc(created),
        spot=True,
        problem=problem,
    )


def copyable_tags(tags: list[Mapping[str, str]] | None) -> dict[str, str]:
    """A spot request's tags as CreateTags may set them on its instance (aws: keys are EC2's)."""
    return {t["Key"]: t["Value"] for t in tags or () if not t["Key"].startswith("aws:")}


def classify_error_code(code: str, http_status: int | None = None) -> LaunchFailureKind:
    """What an EC2 error code means for the master: wait, fall back, or tell the user."""
    if code in _CAPACITY_CODES:
        return LaunchFailureKind.CAPACITY
    if code in _PRICE_CODES:
        return LaunchFailureKind.PRICE
    limit = (
        code.endswith("LimitExceeded") and code != "RequestLimitExceeded"
    )  # that one: throttling
    if code in _QUOTA_CODES or limit:
        return LaunchFailureKind.QUOTA
    if code in _TRANSIENT_CODES or (http_status is not None and http_status >= 500):
        return LaunchFailureKind.TRANSIENT
    # InvalidParameter*, InvalidAMIID.*, InvalidKeyPair.*, UnauthorizedOperation, OptInRequired,
    # and any other refusal of the request itself: retrying the same request cannot help.
    return LaunchFailureKind.CONFIG


_SKEW_STEP = timedelta(seconds=10)


def round_skew_up(skew: timedelta) -> timedelta:
    """AWS's clock minus ours, rounded up to a multiple of 10 s (reference §2.6)."""
    return _SKEW_STEP * math.ceil(skew / _SKEW_STEP)


@dataclass(frozen=True)
class SpotRequestsView:
    """What a set of described spot requests means for a listing (reference §2.6)."""

    pseudo: list[Instance]  # open requests, and failed ones the user must see (state Unknown)
    fulfilled: dict[str, dict[str, str]]  # instance id -> its request's tags, to copy onto it
    orphaned: list[str]  # instances still running after their request was cancelled
    finished: set[str]  # requests in a terminal state: no longer tracked
    problems: dict[str, str]  # request id -> what the user must act on

    def launched_ids(self) -> list[str]:
        """What a launch made that is still alive: instance ids, else request ids."""
        pending = [p.id for p in self.pseudo if p.state is InstanceState.SPOT_REQUEST_PENDING]
        return [*self.fulfilled, *pending]


def read_spot_requests(requests: list[Mapping[str, Any]]) -> SpotRequestsView:
    """Sort described spot requests into pending, fulfilled, orphaned and finished ones."""
    view = SpotRequestsView(pseudo=[], fulfilled={}, orphaned=[], finished=set(), problems={})
    for request in requests:
        request_id = request["SpotInstanceRequestId"]
        state = request["State"]
        instance_id = request.get("InstanceId")
        problem = spot_problem(request)
        if problem:
            view.problems[request_id] = problem
        if state == "active" and instance_id:
            view.fulfilled[instance_id] = copyable_tags(request.get("Tags"))
        elif state in ("open", "active"):
            view.pseudo.append(pseudo_instance(request_id, request["CreateTime"], problem=problem))
        else:
            view.finished.add(request_id)
            code = (request.get("Status") or {}).get("Code")
            if code == SPOT_CANCELED_RUNNING and instance_id:
                view.orphaned.append(instance_id)
            if problem:
                # Shown once, so the pool shows why; the decider ignores Unknown instances.
                view.pseudo.append(
                    pseudo_instance(
                        request_id,
                        request["CreateTime"],
                        problem=problem,
                        state=InstanceState.UNKNOWN,
                    )
                )
    return view


# -- EC2 Fleet (multi-offer pools) ----------------------------------------------------------

FLEET_SPOT_STRATEGY = "capacity-optimized"
FLEET_ON_DEMAND_STRATEGY = "prioritized"
_TEMPLATE_PREFIX = "resolute-"


def launch_template_data(spec: Ec2LaunchSpec) -> dict[str, Any]:
    """The launch template every override of a pool's fleet starts from: the spec without its
    instance type and subnet (the overrides give those)."""
    nic = {
        "DeviceIndex": 0,
        "AssociatePublicIpAddress": spec.public_ip,
        "DeleteOnTermination": True,
    }
    if spec.security_group_id:
        nic["Groups"] = [spec.security_group_id]
    data: dict[str, Any] = {
        "ImageId": spec.image_id,
        "KeyName": spec.ssh_key_name,
        "UserData": base64.b64encode(spec.user_data.encode()).decode("ascii"),
        "BlockDeviceMappings": _common_launch_fields(spec)["BlockDeviceMappings"],
        "NetworkInterfaces": [nic],
        "InstanceInitiatedShutdownBehavior": "terminate",
        "MetadataOptions": dict(METADATA_OPTIONS),
    }
    if spec.iam_instance_profile_arn:
        data["IamInstanceProfile"] = {"Arn": spec.iam_instance_profile_arn}
    return data


def launch_template_name(tag_value: str, pool: str, data: Mapping[str, Any]) -> str:
    """A name that changes with the template's content, so a changed config gets a new one."""
    digest = hashlib.sha256(
        repr((tag_value, pool, sorted(data.items(), key=lambda kv: kv[0]))).encode()
    ).hexdigest()
    return f"{_TEMPLATE_PREFIX}{digest[:24]}"


@dataclass(frozen=True)
class FleetOverride:
    """One (instance type, subnet) of a fleet call, with its weight (slots) and priority."""

    instance_type: str
    subnet_id: str
    weight: int
    priority: int


def fleet_request(
    *,
    template_name: str,
    overrides: list[FleetOverride],
    units: int,
    spot: bool,
    tags: Mapping[str, str],
    token: str,
    max_price: str | None = None,
) -> dict[str, Any]:
    """CreateFleet arguments: an instant fleet of `units` slots over the overrides, all in one
    availability zone and of one type (a gang must reach its members, and agents of one launch
    are alike), all or nothing (MinTargetCapacity)."""
    entries = []
    for o in overrides:
        entry: dict[str, Any] = {
            "InstanceType": o.instance_type,
            "WeightedCapacity": float(max(o.weight, 1)),
            "Priority": float(o.priority),
        }
        if o.subnet_id:
            entry["SubnetId"] = o.subnet_id
        if spot and max_price is not None:
            entry["MaxPrice"] = max_price
        entries.append(entry)
    placement = {
        "SingleInstanceType": True,
        "SingleAvailabilityZone": True,
        "MinTargetCapacity": units,
    }
    request: dict[str, Any] = {
        "Type": "instant",
        "ClientToken": token,
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateName": template_name,
                    "Version": "$Latest",
                },
                "Overrides": entries,
            }
        ],
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": units,
            "DefaultTargetCapacityType": "spot" if spot else "on-demand",
            "TargetCapacityUnitType": "units",
        },
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tag_list(tags)}],
    }
    if spot:
        request["SpotOptions"] = {
            "AllocationStrategy": FLEET_SPOT_STRATEGY,
            "InstanceInterruptionBehavior": "terminate",
            **placement,
        }
    else:
        request["OnDemandOptions"] = {"AllocationStrategy": FLEET_ON_DEMAND_STRATEGY, **placement}
    return request


@dataclass(frozen=True)
class FleetAnswer:
    """A CreateFleet answer, per (instance type, subnet, spot): ids launched, errors."""

    launched: dict[tuple[str, str, bool], list[str]]
    errors: list[tuple[tuple[str, str, bool], str, str]]  # (type, subnet, spot), code, message


def read_fleet_answer(answer: Mapping[str, Any], *, spot: bool) -> FleetAnswer:
    launched: dict[tuple[str, str, bool], list[str]] = {}
    errors: list[tuple[tuple[str, str, bool], str, str]] = []
    for item in answer.get("Instances") or ():
        where = _fleet_where(item, spot)
        launched.setdefault(where, []).extend(item.get("InstanceIds") or ())
    for item in answer.get("Errors") or ():
        code = str(item.get("ErrorCode") or "Unknown")
        errors.append((_fleet_where(item, spot), code, str(item.get("ErrorMessage") or "")))
    return FleetAnswer(launched, errors)


def _fleet_where(item: Mapping[str, Any], spot: bool) -> tuple[str, str, bool]:
    overrides = (item.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
    instance_type = overrides.get("InstanceType") or item.get("InstanceType") or ""
    lifecycle = item.get("Lifecycle")
    is_spot = spot if lifecycle is None else lifecycle == "spot"
    return str(instance_type), str(overrides.get("SubnetId") or ""), is_spot
