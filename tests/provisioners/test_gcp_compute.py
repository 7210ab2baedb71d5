"""The GCP provisioner against the fake GCE, through the real google-cloud-compute client."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provisioners.base import InstanceState, LaunchFailure, LaunchFailureKind
from provisioners.config import GcpProviderConfig, parse_provider
from provisioners.gcp_compute import GcpComputeProvisioner
from provisioners.gcp_mapping import (
    CLOUD_PLATFORM_SCOPE,
    REQUEST_LABEL,
    gce_request_id,
    instance_state,
    label_filter,
    min_cpu_platform,
    name_pattern,
)
from tests.support.fake_gce import FakeGCE

P, Z = "proj", "zone-a"
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
SCRIPT = "#!/bin/bash\necho start the agent\n"
SCOPE = (P, Z, "managed-by", "master-1", "p1")


@pytest.fixture
def gce() -> Iterator[FakeGCE]:
    with FakeGCE(clock=lambda: NOW) as fake:
        yield fake


Make = Callable[..., GcpComputeProvisioner]


@pytest.fixture
def make(gce: FakeGCE) -> Make:
    def build(**overrides: Any) -> GcpComputeProvisioner:
        values: dict[str, Any] = {
            "project": P,
            "zone": Z,
            "pool": "p1",
            "master_url": "http://master.example.internal:8080",
            "startup_script": SCRIPT,
            "api_endpoint": gce.endpoint,
            "label_key": "managed-by",
            "label_value": "master-1",
            "name_prefix": "det-agent-",
            "rng": random.Random(7),
            "poll_interval": 0.01,
            "operation_timeout_period": 10.0,
        }
        values.update(overrides)
        return GcpComputeProvisioner(**values)

    return build


def _sent(gce: FakeGCE, index: int = -1) -> dict[str, Any]:
    return gce.bulk_inserts[index]["instanceProperties"]


def _metadata(properties: dict[str, Any]) -> dict[str, str]:
    return {i["key"]: i["value"] for i in properties["metadata"]["items"]}


# -- what a launch asks for --------------------------------------------------------------------


def test_launch_sends_one_bulk_insert_with_everything_the_reference_lists(
    gce: FakeGCE, make: Make
) -> None:
    names = make(
        labels={"team": "vision"},
        machine_type="a2-highgpu-1g",
        gpu_type="nvidia-tesla-a100",
        gpu_num=1,
        boot_disk_size=250,
        boot_disk_source_image="projects/p/global/images/agent-img",
        boot_disk_type="pd-ssd",
        network="projects/proj/global/networks/det",
        subnetwork="projects/proj/regions/r/subnetworks/det-sub",
        network_tags=["det-agent", "allow-master"],
        service_account_email="agents@proj.iam.gserviceaccount.com",
    ).launch(2, request_id="req-1")

    assert gce.request_count("POST", "/instances/bulkInsert") == 1
    body = gce.bulk_inserts[0]
    assert (int(body["count"]), int(body["minCount"])) == (2, 1)
    assert body["namePattern"].startswith("det-agent-") and body["namePattern"].endswith("-#####")
    props = body["instanceProperties"]
    assert props["machineType"] == "a2-highgpu-1g"
    assert props["minCpuPlatform"] == "Intel Cascade Lake"
    assert props["guestAccelerators"] == [
        {"acceleratorType": "nvidia-tesla-a100", "acceleratorCount": 1}
    ]
    assert props["disks"] == [
        {
            "boot": True,
            "autoDelete": True,
            "type": "PERSISTENT",
            "initializeParams": {
                "sourceImage": "projects/p/global/images/agent-img",
                "diskSizeGb": "250",
                "diskType": "pd-ssd",
            },
        }
    ]
    rid = gce_request_id(SCOPE, "req-1")
    assert props["labels"] == {
        "team": "vision",
        "managed-by": "master-1",
        "determined-master-host": "master-example-internal",
        "determined-master-port": "8080",
        "determined-resource-pool": "p1",
        REQUEST_LABEL: rid,
    }
    assert _metadata(props) == {
        "startup-script": SCRIPT,
        "determined-master-address": "master.example.internal:8080",
    }
    assert props["networkInterfaces"] == [
        {
            "network": "projects/proj/global/networks/det",
            "subnetwork": "projects/proj/regions/r/subnetworks/det-sub",
        }
    ]
    assert props["tags"] == {"items": ["det-agent", "allow-master"]}
    assert props["serviceAccounts"] == [
        {"email": "agents@proj.iam.gserviceaccount.com", "scopes": [CLOUD_PLATFORM_SCOPE]}
    ]
    assert props["scheduling"] == {"onHostMaintenance": "TERMINATE", "preemptible": False}

    # What GCE stored: two instances named from the pattern, carrying the same properties.
    stored = {i["name"]: i for i in gce.instances()}
    assert (
        sorted(stored)
        == names
        == [body["namePattern"].replace("#####", f"0000{n}") for n in (1, 2)]
    )
    for instance in stored.values():
        assert instance["labels"] == props["labels"]
        assert _metadata(instance) == _metadata(props)
        assert instance["machineType"].endswith(f"/zones/{Z}/machineTypes/a2-highgpu-1g")
        assert instance["guestAccelerators"] == props["guestAccelerators"]
        assert instance["scheduling"] == props["scheduling"]
        assert instance["serviceAccounts"] == props["serviceAccounts"]


def test_defaults_no_gpu_and_no_service_account(gce: FakeGCE, make: Make) -> None:
    make(gpu_num=0, machine_type="n1-standard-8").launch(1, request_id="r")
    props = _sent(gce)
    assert "guestAccelerators" not in props
    assert "serviceAccounts" not in props
    assert "tags" not in props
    assert props["minCpuPlatform"] == "Intel Broadwell"
    assert props["networkInterfaces"] == [{"network": f"projects/{P}/global/networks/default"}]
    disk = props["disks"][0]["initializeParams"]
    assert disk["diskType"] == f"projects/{P}/zones/{Z}/diskTypes/pd-standard"
    assert disk["diskSizeGb"] == "200"


def test_external_ip_is_a_premium_one_to_one_nat(gce: FakeGCE, make: Make) -> None:
    make(external_ip=True).launch(1, request_id="r")
    (interface,) = _sent(gce)["networkInterfaces"]
    assert interface["accessConfigs"] == [
        {"name": "External NAT", "type": "ONE_TO_ONE_NAT", "networkTier": "PREMIUM"}
    ]
    (stored,) = gce.instances()
    assert stored["networkInterfaces"][0]["accessConfigs"] == interface["accessConfigs"]


def test_explicit_service_account_scopes_are_kept(gce: FakeGCE, make: Make) -> None:
    scopes = ["https://www.googleapis.com/auth/devstorage.read_only"]
    make(service_account_email="sa@p.iam", service_account_scopes=scopes).launch(1, request_id="r")
    assert _sent(gce)["serviceAccounts"] == [{"email": "sa@p.iam", "scopes": scopes}]


def test_preemptible_and_spot_scheduling(gce: FakeGCE, make: Make) -> None:
    make(preemptible=True).launch(1, request_id="a")
    assert _sent(gce)["scheduling"] == {"onHostMaintenance": "TERMINATE", "preemptible": True}
    make(spot=True).launch(1, request_id="b")
    assert _sent(gce)["scheduling"] == {
        "onHostMaintenance": "TERMINATE",
        "preemptible": False,
        "provisioningModel": "SPOT",
        "instanceTerminationAction": "DELETE",
    }
    spot = {i.id: i.spot for i in make().list()}
    assert sorted(spot.values()) == [True, True]


def test_base_config_is_merged_under_ours(gce: FakeGCE, make: Make) -> None:
    base = {
        "description": "from base",
        "canIpForward": True,
        "labels": {"cost-center": "42", "managed-by": "someone-else"},
        "metadata": {"items": [{"key": "enable-oslogin", "value": "TRUE"}]},
        "scheduling": {"automaticRestart": False},
        "machineType": "e2-small",
    }
    make(base_config=base).launch(1, request_id="r")
    props = _sent(gce)
    assert props["description"] == "from base" and props["canIpForward"] is True
    assert props["labels"]["cost-center"] == "42"
    assert props["labels"]["managed-by"] == "master-1"
    assert _metadata(props)["enable-oslogin"] == "TRUE"
    assert _metadata(props)["startup-script"] == SCRIPT
    assert props["scheduling"]["automaticRestart"] is False
    assert props["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert props["machineType"] == "n1-standard-32"


def test_a_base_config_gce_would_not_understand_fails_at_construction(make: Make) -> None:
    with pytest.raises(ValueError, match="base_config"):
        make(base_config={"noSuchField": 1})


def test_master_labels_for_an_ip_and_a_default_port(gce: FakeGCE, make: Make) -> None:
    make(master_url="https://10.1.2.3").launch(1, request_id="r")
    props = _sent(gce)
    assert props["labels"]["determined-master-host"] == "10-1-2-3"
    assert props["labels"]["determined-master-port"] == "443"
    assert _metadata(props)["determined-master-address"] == "10.1.2.3:443"


def test_a_pool_name_gce_would_refuse_as_a_label_is_made_valid(gce: FakeGCE, make: Make) -> None:
    provisioner = make(pool="GPU.Pool")
    names = provisioner.launch(1, request_id="r")
    assert _sent(gce)["labels"]["determined-resource-pool"] == "gpu-pool"
    assert [i.id for i in provisioner.list()] == names


@pytest.mark.parametrize(
    ("machine_type", "platform"),
    [
        ("a2-highgpu-1g", "Intel Cascade Lake"),
        ("a2-megagpu-16g", "Intel Cascade Lake"),
        ("a2-ultragpu-8g", "Intel Cascade Lake"),
        ("g2-standard-4", "Intel Cascade Lake"),
        ("n2-standard-8", "Intel Cascade Lake"),
        ("n1-standard-32", "Intel Broadwell"),
        ("n1-highmem-8", "Intel Broadwell"),
        ("c2-standard-4", "Intel Broadwell"),
    ],
)
def test_min_cpu_platform(machine_type: str, platform: str) -> None:
    assert min_cpu_platform(machine_type) == platform


# -- names (G1) --------------------------------------------------------------------------------


def test_g1_an_over_long_prefix_gives_a_63_character_pattern() -> None:
    pattern = name_pattern("x" * 80, random.Random(0))
    assert len(pattern) == 63
    assert pattern == "x" * 57 + "-#####"


def test_name_pattern_is_prefix_pet_name_and_number(gce: FakeGCE, make: Make) -> None:
    pattern = name_pattern("det-", random.Random(3))
    assert pattern == name_pattern("det-", random.Random(3))
    assert pattern != name_pattern("det-", random.Random(4))
    prefix, adjective, animal, hashes = pattern.split("-")
    assert (prefix, hashes) == ("det", "#####") and adjective.isalpha() and animal.isalpha()
    # A long prefix still launches: GCE accepts the names the pattern expands to.
    names = make(name_prefix="a" * 70).launch(2, request_id="r")
    assert [len(n) for n in names] == [63, 63]


@given(st.from_regex(r"[a-z][a-z0-9-]{0,90}", fullmatch=True), st.integers(0, 2**32))
def test_name_pattern_never_exceeds_63_and_keeps_the_number(prefix: str, seed: int) -> None:
    pattern = name_pattern(prefix, random.Random(seed))
    assert len(pattern) <= 63
    assert pattern.endswith("-#####") and pattern.count("#") == 5


# -- idempotency --------------------------------------------------------------------------------


def test_the_request_id_is_a_stable_uuid_sent_as_gce_request_id(gce: FakeGCE, make: Make) -> None:
    make().launch(1, request_id="req-7")
    (post,) = [r for r in gce.requests if r.path.endswith("/bulkInsert")]
    assert post.query["requestId"] == gce_request_id(SCOPE, "req-7")
    assert uuid.UUID(post.query["requestId"]).version == 5


def test_another_master_or_pool_with_the_same_request_id_launches_its_own(
    gce: FakeGCE, make: Make
) -> None:
    ours = make().launch(1, request_id="req-1")
    theirs = make(label_value="master-2").launch(1, request_id="req-1")
    other_pool = make(pool="p2").launch(1, request_id="req-1")
    assert len({*ours, *theirs, *other_pool}) == 3
    assert len(gce.instances()) == 3


def test_a_retried_launch_after_a_master_crash_creates_nothing(gce: FakeGCE, make: Make) -> None:
    first = make(rng=random.Random(1)).launch(2, request_id="req-crash")
    # A new master process: another random name pattern, the same stored request id.
    again = make(rng=random.Random(2)).launch(2, request_id="req-crash")
    assert again == first
    assert len(gce.instances()) == 2
    bodies = [b["namePattern"] for b in gce.bulk_inserts]
    assert bodies[0] != bodies[1]
    more = make(rng=random.Random(2)).launch(1, request_id="req-other")
    assert len(more) == 1 and not set(more) & set(first)
    assert len(gce.instances()) == 3


def test_launch_zero_sends_nothing(gce: FakeGCE, make: Make) -> None:
    assert make().launch(0, request_id="r") == []
    assert gce.requests == []


def test_partial_capacity_returns_the_instances_gce_made(gce: FakeGCE, make: Make) -> None:
    gce.capacity = 2
    names = make().launch(3, request_id="r")
    assert len(names) == 2


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("ZONE_RESOURCE_POOL_EXHAUSTED", LaunchFailureKind.CAPACITY),
        ("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", LaunchFailureKind.CAPACITY),
        ("QUOTA_EXCEEDED", LaunchFailureKind.QUOTA),
        ("RESOURCE_NOT_FOUND", LaunchFailureKind.CONFIG),
    ],
)
def test_operation_errors_map_to_launch_failures(
    gce: FakeGCE, make: Make, reason: str, kind: LaunchFailureKind
) -> None:
    gce.fail_next_insert(reason, "what GCE said")
    with pytest.raises(LaunchFailure) as failure:
        make().launch(2, request_id="r")
    assert failure.value.kind is kind
    assert reason in failure.value.message and "what GCE said" in failure.value.message
    assert failure.value.capacity_unavailable is (kind is LaunchFailureKind.CAPACITY)
    assert gce.instances() == []


@pytest.mark.parametrize(
    ("status", "reason", "kind"),
    [
        (400, "invalid", LaunchFailureKind.CONFIG),
        (403, "forbidden", LaunchFailureKind.CONFIG),
        (403, "quotaExceeded", LaunchFailureKind.QUOTA),
        (403, "rateLimitExceeded", LaunchFailureKind.TRANSIENT),
        (404, "notFound", LaunchFailureKind.CONFIG),
        (500, "backendError", LaunchFailureKind.TRANSIENT),
        (503, "unavailable", LaunchFailureKind.TRANSIENT),
    ],
)
def test_http_errors_map_to_launch_failures(
    gce: FakeGCE, make: Make, status: int, reason: str, kind: LaunchFailureKind
) -> None:
    gce.fail_next_call(status, reason, method="POST")
    with pytest.raises(LaunchFailure) as failure:
        make().launch(1, request_id="r")
    assert failure.value.kind is kind


def test_an_invalid_label_is_a_config_failure(gce: FakeGCE, make: Make) -> None:
    with pytest.raises(LaunchFailure) as failure:
        make(labels={"Team": "x"}).launch(1, request_id="r")
    assert failure.value.kind is LaunchFailureKind.CONFIG


def test_an_unreachable_endpoint_is_transient(make: Make) -> None:
    with FakeGCE() as gone:
        endpoint = gone.endpoint
    with pytest.raises(LaunchFailure) as failure:
        make(api_endpoint=endpoint).launch(1, request_id="r")
    assert failure.value.kind is LaunchFailureKind.TRANSIENT


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_operations_are_polled_every_interval_until_done(gce: FakeGCE, make: Make) -> None:
    gce.polls_to_done = 4
    clock = FakeTime()
    make(poll_interval=1.0, sleep=clock.sleep, monotonic=lambda: clock.now).launch(
        1, request_id="r"
    )
    assert clock.sleeps == [1.0] * 4
    assert gce.request_count("GET", "") - gce.request_count("GET", "/instances") == 4


def test_an_operation_not_done_in_time_is_a_transient_failure(gce: FakeGCE, make: Make) -> None:
    gce.stall_operations = True
    clock = FakeTime()
    provisioner = make(
        poll_interval=1.0,
        operation_timeout_period=5.0,
        sleep=clock.sleep,
        monotonic=lambda: clock.now,
    )
    with pytest.raises(LaunchFailure, match="not done after 5 s") as failure:
        provisioner.launch(1, request_id="r")
    assert failure.value.kind is LaunchFailureKind.TRANSIENT
    assert clock.sleeps == [1.0] * 5


def test_an_error_while_polling_is_retried_at_the_next_poll(gce: FakeGCE, make: Make) -> None:
    gce.polls_to_done = 2
    gce.fail_next_call(500, "backendError", method="GET")
    assert len(make().launch(1, request_id="r")) == 1


# -- list ------------------------------------------------------------------------------------------


def test_list_is_scoped_by_the_master_label_and_the_pool(gce: FakeGCE, make: Make) -> None:
    ours = make().launch(2, request_id="r")
    make(pool="p2").launch(1, request_id="r")
    make(label_value="master-2").launch(1, request_id="r")
    gce.create_instance("unlabelled", project=P, zone=Z)
    gce.create_instance("other-zone", project=P, zone="zone-b", labels=_sent(gce, 0)["labels"])
    listed = make().list()
    assert sorted(i.id for i in listed) == ours
    assert len(gce.instances()) == 6
    (flt,) = {
        r.query["filter"] for r in gce.requests if r.query.get("filter", "").count("AND") == 1
    }
    assert flt == label_filter("managed-by", "master-1", "p1")
    assert flt == "(labels.managed-by=master-1) AND (labels.determined-resource-pool=p1)"


def test_list_maps_instances(gce: FakeGCE, make: Make) -> None:
    provisioner = make()
    (name,) = provisioner.launch(1, request_id="r")
    (instance,) = provisioner.list()
    assert instance.id == instance.agent_name == name
    assert instance.state is InstanceState.STARTING
    assert instance.launch_time == NOW
    assert instance.spot is False and instance.problem is None
    provisioner.list()
    assert provisioner.list()[0].state is InstanceState.RUNNING
    gce.set_status(name, "TERMINATED")  # preempted
    assert provisioner.list()[0].state is InstanceState.STOPPED


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ("PROVISIONING", InstanceState.STARTING),
        ("STAGING", InstanceState.STARTING),
        ("RUNNING", InstanceState.RUNNING),
        ("STOPPING", InstanceState.STOPPING),
        ("SUSPENDING", InstanceState.STOPPING),
        ("STOPPED", InstanceState.STOPPED),
        ("SUSPENDED", InstanceState.STOPPED),
        ("TERMINATED", InstanceState.STOPPED),
        ("REPAIRING", InstanceState.UNKNOWN),
    ],
)
def test_status_mapping(status: str, state: InstanceState) -> None:
    assert instance_state(status) is state


def test_list_pages_through_many_instances(gce: FakeGCE, make: Make) -> None:
    gce.page_size = 2
    names = make().launch(5, request_id="r")
    assert sorted(i.id for i in make().list()) == names


# -- terminate ------------------------------------------------------------------------------------


def test_terminate_deletes_each_listed_instance_once(gce: FakeGCE, make: Make) -> None:
    provisioner = make()
    names = provisioner.launch(3, request_id="r")
    provisioner.terminate([names[0], names[1], names[0]])
    deletes = [r.path.rsplit("/", 1)[-1] for r in gce.requests if r.method == "DELETE"]
    assert deletes == names[:2]
    states = {i.id: i.state for i in provisioner.list()}
    assert states == {
        names[0]: InstanceState.STOPPING,
        names[1]: InstanceState.STOPPING,
        names[2]: InstanceState.RUNNING,
    }
    assert [i.id for i in provisioner.list()] == names[2:]


def test_terminate_skips_foreign_unknown_and_stopping_instances(gce: FakeGCE, make: Make) -> None:
    other = make(pool="p2").launch(1, request_id="r")
    gce.create_instance("unlabelled", project=P, zone=Z)
    provisioner = make()
    (mine,) = provisioner.launch(1, request_id="r")
    provisioner.terminate([mine])
    provisioner.terminate([*other, "unlabelled", "never-existed", mine])
    deletes = [r.path.rsplit("/", 1)[-1] for r in gce.requests if r.method == "DELETE"]
    assert deletes == [mine]
    assert {i["name"] for i in gce.instances()} >= {*other, "unlabelled"}


def test_terminate_deletes_a_preempted_instance(gce: FakeGCE, make: Make) -> None:
    provisioner = make()
    (name,) = provisioner.launch(1, request_id="r")
    gce.set_status(name, "TERMINATED")
    provisioner.terminate([name])
    assert gce.request_count("DELETE") == 1


def test_terminate_ignores_an_instance_gone_since_the_listing(gce: FakeGCE, make: Make) -> None:
    provisioner = make()
    names = provisioner.launch(2, request_id="r")
    gce.fail_next_call(404, "notFound", method="DELETE")
    provisioner.terminate(names)
    assert gce.request_count("DELETE") == 2


def test_terminate_tries_every_instance_then_raises_the_first_refusal(
    gce: FakeGCE, make: Make
) -> None:
    provisioner = make()
    names = provisioner.launch(2, request_id="r")
    gce.fail_next_call(403, "forbidden", method="DELETE")
    with pytest.raises(Exception, match="forbidden"):
        provisioner.terminate(names)
    assert gce.request_count("DELETE") == 2
    assert gce.instance(names[1])["status"] == "STOPPING"


def test_slots_per_instance(make: Make) -> None:
    assert make(gpu_num=2).slots_per_instance == 2
    assert make(gpu_num=0, slots_per_instance=1).slots_per_instance == 1


# -- from_config ----------------------------------------------------------------------------------


def test_from_config_takes_every_key_of_a_gcp_provider_block(gce: FakeGCE) -> None:
    cfg = parse_provider(
        {
            "type": "gcp",
            "project": P,
            "zone": Z,
            "api_endpoint": gce.endpoint,
            "label_value": "master-9",
            "name_prefix": "pool-a-",
            "labels": {"team": "nlp"},
            "boot_disk_size": 300,
            "boot_disk_source_image": "projects/x/global/images/img",
            "network_interface": {
                "network": "projects/proj/global/networks/n",
                "external_ip": True,
            },
            "network_tags": ["agents"],
            "service_account": {"email": "sa@proj.iam.gserviceaccount.com"},
            "instance_type": {
                "machine_type": "n1-standard-8",
                "gpu_type": "nvidia-tesla-v100",
                "gpu_num": 2,
            },
            "spot": True,
            "operation_timeout_period": "30s",
            "base_config": {"description": "d"},
        }
    )
    assert isinstance(cfg, GcpProviderConfig)
    provisioner = GcpComputeProvisioner.from_config(
        cfg,
        pool="gpu",
        master_url="http://10.0.0.9:8080",
        setup_script=SCRIPT,
        rng=random.Random(1),
        poll_interval=0.01,
    )
    assert provisioner.slots_per_instance == 2
    assert provisioner.operation_timeout_period == 30.0
    (name,) = provisioner.launch(1, request_id="r")
    assert name.startswith("pool-a-")
    props = _sent(gce)
    assert props["labels"]["managed-by"] == "master-9"
    assert props["labels"]["team"] == "nlp"
    assert props["labels"]["determined-resource-pool"] == "gpu"
    assert props["labels"]["determined-master-host"] == "10-0-0-9"
    assert _metadata(props)["startup-script"] == SCRIPT
    assert props["disks"][0]["initializeParams"] == {
        "sourceImage": "projects/x/global/images/img",
        "diskSizeGb": "300",
        "diskType": f"projects/{P}/zones/{Z}/diskTypes/pd-standard",
    }
    assert props["networkInterfaces"][0]["network"] == "projects/proj/global/networks/n"
    assert "accessConfigs" in props["networkInterfaces"][0]
    assert props["tags"] == {"items": ["agents"]}
    assert props["serviceAccounts"][0]["scopes"] == [CLOUD_PLATFORM_SCOPE]
    assert props["guestAccelerators"] == [
        {"acceleratorType": "nvidia-tesla-v100", "acceleratorCount": 2}
    ]
    assert props["scheduling"]["provisioningModel"] == "SPOT"
    assert props["description"] == "d"
    assert [i.id for i in provisioner.list()] == [name]


def test_from_config_cpu_slots_and_no_gpu(gce: FakeGCE) -> None:
    cfg = parse_provider(
        {
            "type": "gcp",
            "project": P,
            "zone": Z,
            "api_endpoint": gce.endpoint,
            "cpu_slots_allowed": True,
            "instance_type": {"machine_type": "n2-standard-4", "gpu_num": 0},
        }
    )
    provisioner = GcpComputeProvisioner.from_config(
        cfg, pool="cpu", master_url="http://m:8080", setup_script=SCRIPT, poll_interval=0.01
    )
    assert provisioner.slots_per_instance == 1
    provisioner.launch(1, request_id="r")
    assert "guestAccelerators" not in _sent(gce)
    assert _sent(gce)["minCpuPlatform"] == "Intel Cascade Lake"


def test_no_client_is_built_before_the_first_call() -> None:
    # No endpoint and no credentials: building a client would look for real credentials.
    provisioner = GcpComputeProvisioner(
        project=P, zone=Z, pool="p1", master_url="http://m:8080", startup_script=SCRIPT
    )
    assert provisioner._clients is None
