"""Pure pieces of the GCP provisioner: what a launch asks GCE for, and what a listing means.

Everything here works on plain values and GCE's REST JSON shapes (camelCase keys), so it can be
tested without importing google-cloud-compute, which only `provisioners.gcp_compute` imports.
"""

from __future__ import annotations

import copy
import random
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from provisioners.base import InstanceState, LaunchFailureKind

MAX_NAME_LENGTH = 63
NAME_SUFFIX = "-#####"
POOL_LABEL = "determined-resource-pool"
MASTER_HOST_LABEL = "determined-master-host"
MASTER_PORT_LABEL = "determined-master-port"
# Not in Determined: it lets a launch find the instances its bulkInsert made, also when the call
# is a retry after a master crash (GCE then answers the first call's operation, whose instances
# carry the first call's random name pattern).
REQUEST_LABEL = "determined-launch-request"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"

_CASCADE_LAKE_MACHINES = ("a2-highgpu", "a2-megagpu", "a2-ultragpu", "g2-standard", "n2-standard")
_REQUEST_NAMESPACE = uuid.UUID("6f1f2d0e-3c55-4b8e-9a0f-5d1b7c2e4a90")

_ADJECTIVES = (
    "able", "amber", "ample", "azure", "brave", "brisk", "calm", "clever", "cosmic", "crisp",
    "daring", "deft", "eager", "early", "famous", "fancy", "fluent", "frank", "gentle", "golden",
    "happy", "hardy", "honest", "humble", "jolly", "keen", "kind", "lively", "loyal", "lucid",
    "mellow", "merry", "modest", "noble", "novel", "patient", "plucky", "polite", "proud", "quick",
    "quiet", "rapid", "ready", "robust", "rustic", "sharp", "shiny", "silent", "smart", "snappy",
    "solid", "steady", "sunny", "swift", "tidy", "upbeat", "vivid", "warm", "witty", "zesty",
)  # fmt: skip
_ANIMALS = (
    "alpaca", "badger", "beaver", "bison", "bobcat", "camel", "condor", "corgi", "coyote", "crane",
    "dingo", "dolphin", "eagle", "egret", "falcon", "ferret", "finch", "gazelle", "gecko", "gibbon",
    "heron", "hornet", "ibex", "iguana", "jackal", "jaguar", "koala", "lemur", "lizard", "llama",
    "lynx", "marmot", "marten", "mole", "moose", "newt", "ocelot", "otter", "panda", "parrot",
    "pelican", "penguin", "puffin", "quail", "rabbit", "raven", "salmon", "seal", "shrew", "sloth",
    "stork", "tapir", "tiger", "toucan", "turtle", "walrus", "weasel", "wombat", "yak", "zebra",
)  # fmt: skip

# GCE status → decider state (reference §2.7). A preempted VM is TERMINATED, i.e. Stopped, so the
# decider deletes it; anything GCE adds later (REPAIRING, ...) is Unknown and ignored.
_STATES = {
    "PROVISIONING": InstanceState.STARTING,
    "STAGING": InstanceState.STARTING,
    "RUNNING": InstanceState.RUNNING,
    "STOPPING": InstanceState.STOPPING,
    "SUSPENDING": InstanceState.STOPPING,
    "STOPPED": InstanceState.STOPPED,
    "SUSPENDED": InstanceState.STOPPED,
    "TERMINATED": InstanceState.STOPPED,
}

_CAPACITY_CODES = {"ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"}
_QUOTA_CODES = {"QUOTA_EXCEEDED", "quotaExceeded"}
# Throttling is reported as 403 rateLimitExceeded: waiting helps, unlike a quota.
_TRANSIENT_CODES = {
    "INTERNAL_ERROR",
    "SERVICE_UNAVAILABLE",
    "backendError",
    "internalError",
    "rateLimitExceeded",
    "userRateLimitExceeded",
}


def name_pattern(prefix: str, rng: random.Random) -> str:
    """GCE's bulkInsert name pattern: prefix + a two-word pet name + ``-#####``, ≤ 63 characters.

    An over-long prefix is cut, never the ``#####`` that GCE numbers the instances with (G1).
    """
    base = f"{prefix}{rng.choice(_ADJECTIVES)}-{rng.choice(_ANIMALS)}"
    return base[: MAX_NAME_LENGTH - len(NAME_SUFFIX)] + NAME_SUFFIX


def gce_request_id(scope: Sequence[str], request_id: str) -> str:
    """The UUID GCE wants as requestId, the same for every retry of one launch.

    `scope` (project, zone, master label, pool) keeps two masters or pools that happen to use
    the same request ids in one project from answering each other's launches.
    """
    return str(uuid.uuid5(_REQUEST_NAMESPACE, "/".join([*scope, request_id])))


def label_value(text: str) -> str:
    """`text` as a valid GCE label value: lower case, [a-z0-9_-], ≤ 63 characters."""
    return re.sub(r"[^a-z0-9_-]", "-", text.lower())[:MAX_NAME_LENGTH]


def label_filter(label_key: str, label_value_: str, pool: str) -> str:
    """The instances.list filter that scopes a listing to this master's pool (reference §2.7)."""
    return f"(labels.{label_key}={label_value_}) AND (labels.{POOL_LABEL}={label_value(pool)})"


def min_cpu_platform(machine_type: str) -> str:
    if machine_type.startswith(_CASCADE_LAKE_MACHINES):
        return "Intel Cascade Lake"
    return "Intel Broadwell"


@dataclass(frozen=True)
class MasterAddress:
    """Where agents find the master: labels carry host and port, metadata host:port."""

    host: str
    port: int

    @classmethod
    def parse(cls, url: str) -> MasterAddress:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if not parts.hostname:
            raise ValueError(f"master URL {url!r} has no host")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.hostname, port)

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class GcpLaunchSpec:
    """Everything an instance of this pool is made from (GCP provider keys, reference §2.9)."""

    pool: str
    label_key: str
    label_value: str
    master: MasterAddress
    startup_script: str
    machine_type: str
    gpu_type: str
    gpu_num: int
    preemptible: bool
    spot: bool
    boot_disk_size: int
    boot_disk_source_image: str
    boot_disk_type: str
    network: str
    subnetwork: str | None
    external_ip: bool
    network_tags: Sequence[str] = ()
    service_account_email: str = ""
    service_account_scopes: Sequence[str] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    base_config: Mapping[str, Any] | None = None

    def pool_labels(self) -> dict[str, str]:
        """The labels every instance of this pool carries; user labels lose to ours."""
        return {
            **self.labels,
            self.label_key: self.label_value,
            MASTER_HOST_LABEL: label_value(self.master.host.replace(".", "-")),
            MASTER_PORT_LABEL: str(self.master.port),
            # GCE refuses upper case and most punctuation in label values; pool names may have them.
            POOL_LABEL: label_value(self.pool),
        }


def instance_properties(spec: GcpLaunchSpec, *, launch_label: str) -> dict[str, Any]:
    """GCE InstanceProperties (REST JSON) for one launch, `base_config` merged underneath.

    Keys of `base_config` the provisioner does not set are kept; labels and metadata items are
    merged key by key (ours win); every other key we set replaces the base's.
    """
    scheduling: dict[str, Any] = {"onHostMaintenance": "TERMINATE", "preemptible": spec.preemptible}
    if spec.spot:
        scheduling.update(provisioningModel="SPOT", instanceTerminationAction="DELETE")
    interface: dict[str, Any] = {"network": spec.network}
    if spec.subnetwork:
        interface["subnetwork"] = spec.subnetwork
    if spec.external_ip:
        interface["accessConfigs"] = [
            {"name": "External NAT", "type": "ONE_TO_ONE_NAT", "networkTier": "PREMIUM"}
        ]
    ours: dict[str, Any] = {
        "machineType": spec.machine_type,
        "minCpuPlatform": min_cpu_platform(spec.machine_type),
        "disks": [
            {
                "boot": True,
                "autoDelete": True,
                "type": "PERSISTENT",
                "initializeParams": {
                    "sourceImage": spec.boot_disk_source_image,
                    "diskSizeGb": str(spec.boot_disk_size),
                    "diskType": spec.boot_disk_type,
                },
            }
        ],
        "labels": {**spec.pool_labels(), REQUEST_LABEL: launch_label},
        "networkInterfaces": [interface],
        "scheduling": scheduling,
        "metadata": {
            "items": [
                {"key": "startup-script", "value": spec.startup_script},
                {"key": "determined-master-address", "value": spec.master.netloc},
            ]
        },
    }
    if spec.gpu_num > 0:
        ours["guestAccelerators"] = [
            {"acceleratorType": spec.gpu_type, "acceleratorCount": spec.gpu_num}
        ]
    if spec.network_tags:
        ours["tags"] = {"items": list(spec.network_tags)}
    if spec.service_account_email:
        scopes = list(spec.service_account_scopes) or [CLOUD_PLATFORM_SCOPE]
        ours["serviceAccounts"] = [{"email": spec.service_account_email, "scopes": scopes}]
    return _merge_base(copy.deepcopy(dict(spec.base_config or {})), ours)


def _merge_base(base: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in ours.items():
        if key == "labels":
            merged[key] = {**base.get(key, {}), **value}
        elif key == "metadata":
            items = {i["key"]: i for i in base.get(key, {}).get("items", [])}
            items.update({i["key"]: i for i in value["items"]})
            merged[key] = {**base.get(key, {}), "items": list(items.values())}
        elif key == "scheduling":
            merged[key] = {**base.get(key, {}), **value}
        else:
            merged[key] = value
    return merged


def instance_state(status: str) -> InstanceState:
    return _STATES.get(status, InstanceState.UNKNOWN)


def failure_kind(code: str, http_status: int | None) -> LaunchFailureKind:
    """What a GCE error code (an operation's error code or an HTTP error's reason) means for us."""
    if code in _CAPACITY_CODES:
        return LaunchFailureKind.CAPACITY
    if code in _QUOTA_CODES or code.endswith("QUOTA_EXCEEDED"):
        return LaunchFailureKind.QUOTA
    if code in _TRANSIENT_CODES:
        return LaunchFailureKind.TRANSIENT
    if http_status is not None and (http_status >= 500 or http_status in (408, 429)):
        return LaunchFailureKind.TRANSIENT
    return LaunchFailureKind.CONFIG


# A GCE zone is its region plus "-<letter>" (us-central1-a lies in us-central1). Names of any
# other shape (a test's "zone-a") have no known region and are launched zone by zone.
_ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+[0-9]+)-[a-z]$")


def zone_region(zone: str) -> str | None:
    """The region a GCE zone lies in; None for a name that is not region-letter shaped."""
    match = _ZONE.match(zone)
    return match["region"] if match else None


@dataclass(frozen=True)
class RegionalLaunch:
    """One regional bulkInsert: `count` instances of one machine shape, in whichever of `zones`
    (all in `region`, in preference order) GCE has room in, all in that one zone."""

    region: str
    zones: tuple[str, ...]
    count: int


def regional_launch(choices: Sequence[tuple[str, str, int]]) -> RegionalLaunch | None:
    """The regional bulkInsert that stands for the first choices, or None for a zonal one.

    `choices` are (shape, zone, count) in the planner's order; `shape` names what an instance
    is (machine type, accelerators, market). The first choice and the later ones of the same
    shape and count in other zones of its region go in one call; a choice of another shape or
    region ends the run, so the planner's order is kept (a cheaper type in zone a is never
    skipped for the first type's zone b). Fewer than two zones: None (the zonal call).
    """
    if not choices:
        return None
    shape, first_zone, count = choices[0]
    region = zone_region(first_zone)
    if region is None:
        return None
    zones = [first_zone]
    for other_shape, zone, other_count in choices[1:]:
        if (other_shape, other_count) != (shape, count) or zone_region(zone) != region:
            break
        if zone not in zones:
            zones.append(zone)
    if len(zones) < 2:
        return None
    return RegionalLaunch(region, tuple(zones), count)


def location_policy(zones: Sequence[str]) -> dict[str, Any]:
    """GCE's LocationPolicy (REST JSON) allowing exactly `zones`, all instances in one of them:
    a gang's members must reach each other, so they never straddle zones."""
    return {
        "locations": {f"zones/{zone}": {"preference": "ALLOWED"} for zone in zones},
        "targetShape": "ANY_SINGLE_ZONE",
    }
