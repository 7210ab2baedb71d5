"""GCP pools with several zones and machine types, against the fake GCE through the real
google-cloud-compute client: a zone out of resources, the next zone (zone by zone across
regions, one regional bulkInsert with a location policy within a region), listing every zone."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from provisioners.base import LaunchFailureKind
from provisioners.config import parse_provider, pool_offers
from provisioners.gcp_compute import GcpComputeProvisioner
from tests.support.fake_gce import FakeGCE

P = "proj"


@pytest.fixture
def gce() -> Iterator[FakeGCE]:
    with FakeGCE() as fake:
        yield fake


def _provisioner(
    gce: FakeGCE, zones: tuple[str, ...] = ("us-central1-a", "us-east1-b")
) -> GcpComputeProvisioner:
    cfg = parse_provider(
        {
            "type": "gcp",
            "project": P,
            "zones": list(zones),
            "machine_types": [
                {"machine_type": "n1-standard-8", "gpu_type": "nvidia-tesla-t4", "gpu_num": 1},
                {"machine_type": "n1-standard-32", "gpu_type": "nvidia-tesla-t4", "gpu_num": 4},
            ],
            "api_endpoint": gce.endpoint,
            "label_value": "master-1",
            "master_url": "http://10.0.0.2:8080",
        }
    )
    return GcpComputeProvisioner.from_config(
        cfg,
        pool="p1",
        master_url="http://10.0.0.2:8080",
        setup_script="#!/bin/bash\n",
        rng=random.Random(3),
        poll_interval=0.01,
    )


def test_a_zone_out_of_resources_is_reported_and_the_next_zone_gives_the_machines(
    gce: FakeGCE,
) -> None:
    # Zones of two regions: no regional call can span them, so the zones are tried one by one.
    provisioner = _provisioner(gce)
    a1, b1 = provisioner.offers[0], provisioner.offers[1]
    assert (a1.location, b1.location) == ("us-central1-a", "us-east1-b")
    gce.exhausted_zones["us-central1-a"] = "ZONE_RESOURCE_POOL_EXHAUSTED"

    refused = provisioner.launch_offers([(a1, 2), (b1, 2)], request_id="r1")
    assert refused.instance_ids == []
    (error,) = refused.errors
    assert error.offer_key == a1.key and error.kind is LaunchFailureKind.CAPACITY
    assert "ZONE_RESOURCE_POOL_EXHAUSTED" in error.message

    given = provisioner.launch_offers([(b1, 2)], request_id="r2")
    assert list(given.launched) == [b1.key] and len(given.instance_ids) == 2
    assert len(gce.instances()) == 2
    assert gce.regional_bulk_inserts == []
    (sent,) = [r for r in gce.requests if r.path.endswith("us-east1-b/instances/bulkInsert")]
    props = sent.body["instanceProperties"]
    assert props["machineType"] == "n1-standard-8"
    assert props["guestAccelerators"] == [
        {"acceleratorType": "nvidia-tesla-t4", "acceleratorCount": 1}
    ]
    disk = props["disks"][0]["initializeParams"]["diskType"]
    assert disk == f"projects/{P}/zones/us-east1-b/diskTypes/pd-standard"

    listed = provisioner.list()
    assert {i.offer_key for i in listed} == {b1.key}
    provisioner.terminate([i.id for i in listed])
    assert gce.request_count("DELETE") == 2
    assert all("us-east1-b" in r.path for r in gce.requests if r.method == "DELETE")


REGION_ZONES = ("us-central1-a", "us-central1-b", "us-central1-c")


def test_zones_of_one_region_are_one_regional_bulk_insert_that_skips_the_exhausted_zone(
    gce: FakeGCE,
) -> None:
    provisioner = _provisioner(gce, REGION_ZONES)
    a1, b1, c1 = provisioner.offers[:3]
    gce.exhausted_zones["us-central1-a"] = "ZONE_RESOURCE_POOL_EXHAUSTED"

    result = provisioner.launch_offers([(a1, 4), (b1, 4), (c1, 4)], request_id="r1")
    assert result.errors == ()
    assert list(result.launched) == [b1.key] and len(result.instance_ids) == 4
    assert gce.regional_bulk_inserts == [("us-central1", list(REGION_ZONES))]
    (sent,) = [r for r in gce.requests if r.path.endswith("/instances/bulkInsert")]
    assert sent.path == f"/compute/v1/projects/{P}/regions/us-central1/instances/bulkInsert"
    assert sent.body["locationPolicy"] == {
        "locations": {f"zones/{z}": {"preference": "ALLOWED"} for z in REGION_ZONES},
        "targetShape": "ANY_SINGLE_ZONE",
    }
    assert sent.body["instanceProperties"]["disks"][0]["initializeParams"]["diskType"] == (
        "pd-standard"
    )
    # the gang's four instances are all in one zone
    assert {i["zone"].rpartition("/")[2] for i in gce.instances()} == {"us-central1-b"}
    assert {i.offer_key for i in provisioner.list()} == {b1.key}

    again = provisioner.launch_offers([(a1, 4), (b1, 4), (c1, 4)], request_id="r1")
    assert sorted(again.instance_ids) == sorted(result.instance_ids)
    assert len(gce.instances()) == 4


def test_a_regional_bulk_insert_no_zone_can_serve_makes_every_zone_of_it_cold(
    gce: FakeGCE,
) -> None:
    provisioner = _provisioner(gce, REGION_ZONES)
    a1, b1, c1, a4 = provisioner.offers[:4]
    for zone in REGION_ZONES[:2]:
        gce.exhausted_zones[zone] = "ZONE_RESOURCE_POOL_EXHAUSTED"

    # c1 comes after a type change: the run of one shape ends there, c1 is not in the call
    result = provisioner.launch_offers([(a1, 2), (b1, 2), (a4, 1), (c1, 2)], request_id="r2")
    assert result.instance_ids == []
    assert [e.offer_key for e in result.errors] == [a1.key, b1.key]
    assert {e.kind for e in result.errors} == {LaunchFailureKind.CAPACITY}
    assert "ZONE_RESOURCE_POOL_EXHAUSTED" in result.errors[0].message
    assert gce.regional_bulk_inserts == [("us-central1", ["us-central1-a", "us-central1-b"])]
    assert gce.instances() == []


def test_a_quota_error_is_reported_as_the_offers_error(gce: FakeGCE) -> None:
    provisioner = _provisioner(gce)
    a1 = provisioner.offers[0]
    gce.exhausted_zones["us-central1-a"] = "QUOTA_EXCEEDED"
    result = provisioner.launch_offers([(a1, 1)], request_id="r3")
    assert [e.kind for e in result.errors] == [LaunchFailureKind.QUOTA]


def test_zones_and_machine_types_make_the_offers() -> None:
    cfg = parse_provider(
        {
            "type": "gcp",
            "project": P,
            "zones": ["z-a", "z-b"],
            "machine_types": [
                {"machine_type": "n1-standard-8", "gpu_type": "nvidia-tesla-t4", "gpu_num": 1},
                {
                    "machine_type": "a2-highgpu-1g",
                    "gpu_type": "nvidia-tesla-a100",
                    "gpu_num": 1,
                    "spot_price_per_hour": 1.5,
                },
            ],
            "spot": True,
        }
    )
    assert cfg.zone == "z-a"
    offers = pool_offers(cfg)
    assert [(o.instance_type, o.location, o.spot) for o in offers] == [
        ("n1-standard-8", "z-a", True),
        ("n1-standard-8", "z-b", True),
        ("a2-highgpu-1g", "z-a", True),
        ("a2-highgpu-1g", "z-b", True),
    ]
    # n1-standard-8 spot 0.08 + one T4 spot 0.11 from the table; a2's from the config
    assert offers[0].price_per_hour == pytest.approx(0.19)
    assert offers[2].price_per_hour == 1.5
