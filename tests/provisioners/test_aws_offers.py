"""AWS pools with several offers: EC2 Fleet over moto, capacity errors injected per subnet by a
shim on the wire (tests/support/ec2_capacity_shim.py), the one-type path kept for simple pools."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from provisioners.base import LaunchFailureKind
from provisioners.config import parse_provider, pool_offers
from provisioners.offers import Offer
from tests.support.ec2_capacity_shim import Ec2CapacityShim
from tests.support.moto_server import MotoEc2, aws_provisioner

ICE = "InsufficientInstanceCapacity"


@pytest.fixture
def shim(moto_ec2: MotoEc2) -> Iterator[Ec2CapacityShim]:
    running = Ec2CapacityShim(moto_ec2.endpoint).start()
    yield running
    running.stop()


def _subnets(moto: MotoEc2) -> tuple[str, str]:
    ec2 = moto.client()
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    made = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9.{n}.0/24", AvailabilityZone=f"us-east-1{z}")
        for n, z in ((1, "a"), (2, "b"))
    ]
    return made[0]["Subnet"]["SubnetId"], made[1]["Subnet"]["SubnetId"]


def _provisioner(moto: MotoEc2, shim: Ec2CapacityShim, offers: list[Offer], **kw: object):
    import boto3

    return aws_provisioner(
        moto,
        endpoint_url=shim.endpoint,
        offers=offers,
        client_factory=lambda: boto3.client(
            "ec2", endpoint_url=shim.endpoint, region_name=moto.region
        ),
        **kw,
    )


def _subnet_of(moto: MotoEc2, instance_id: str) -> str:
    return str(moto.describe(instance_id)["SubnetId"])


@pytest.mark.parametrize("spot", [False, True])
def test_fleet_gets_capacity_from_the_next_subnet_when_one_az_has_none(
    moto_ec2: MotoEc2, shim: Ec2CapacityShim, spot: bool
) -> None:
    a, b = _subnets(moto_ec2)
    offers = [Offer("g5.xlarge", a, 1, spot, 1.0, 0), Offer("g5.xlarge", b, 1, spot, 1.0, 1)]
    provisioner = _provisioner(moto_ec2, shim, offers, spot=spot)
    assert provisioner.uses_fleet
    shim.exhausted[a] = ICE

    result = provisioner.launch_offers([(offers[0], 2), (offers[1], 2)], request_id="req-1")

    assert list(result.launched) == [offers[1].key]
    ids = result.instance_ids
    assert len(ids) == 2 and {_subnet_of(moto_ec2, i) for i in ids} == {b}
    (error,) = result.errors
    assert error.offer_key == offers[0].key and error.kind is LaunchFailureKind.CAPACITY
    assert error.message.startswith(ICE)
    (sent,) = shim.actions("CreateFleet")
    assert sent["Type"] == "instant"
    assert sent["LaunchTemplateConfigs.1.Overrides.1.SubnetId"] == a
    assert sent["LaunchTemplateConfigs.1.Overrides.2.SubnetId"] == b
    assert sent["TargetCapacitySpecification.TotalTargetCapacity"] == "2"
    options = "SpotOptions" if spot else "OnDemandOptions"
    strategy = "capacity-optimized" if spot else "prioritized"
    assert sent[f"{options}.AllocationStrategy"] == strategy
    assert sent[f"{options}.SingleAvailabilityZone"] == "true"
    assert sent[f"{options}.MinTargetCapacity"] == "2"
    # listed under the offer they came from, and a repeat of the request makes nothing new
    listed = {i.id: i.offer_key for i in provisioner.list()}
    assert {listed[i] for i in ids} == {offers[1].key}
    again = provisioner.launch_offers([(offers[0], 2), (offers[1], 2)], request_id="req-1")
    assert sorted(again.instance_ids) == sorted(ids)
    assert len(shim.actions("CreateFleet")) == 1


def test_a_fleet_with_every_subnet_out_of_capacity_launches_nothing_and_names_each(
    moto_ec2: MotoEc2, shim: Ec2CapacityShim
) -> None:
    a, b = _subnets(moto_ec2)
    offers = [Offer("g5.xlarge", a, 1, False, 1.0, 0), Offer("g5.xlarge", b, 1, False, 1.0, 1)]
    provisioner = _provisioner(moto_ec2, shim, offers)
    shim.exhausted.update({a: ICE, b: "InstanceLimitExceeded"})

    result = provisioner.launch_offers([(offers[0], 1), (offers[1], 1)], request_id="req-2")

    assert result.instance_ids == [] and moto_ec2.live_instance_ids() == []
    kinds = {e.offer_key: e.kind for e in result.errors}
    assert kinds == {
        offers[0].key: LaunchFailureKind.CAPACITY,
        offers[1].key: LaunchFailureKind.QUOTA,
    }


def test_one_type_one_subnet_keeps_run_instances_and_reports_the_capacity_error(
    moto_ec2: MotoEc2, shim: Ec2CapacityShim
) -> None:
    a, _ = _subnets(moto_ec2)
    only = Offer("g4dn.xlarge", a, 1, False, 0.526)
    provisioner = _provisioner(moto_ec2, shim, [only], subnet_id=a)
    assert not provisioner.uses_fleet
    shim.exhausted[a] = ICE

    result = provisioner.launch_offers([(only, 1)], request_id="req-3")

    assert result.instance_ids == [] and [e.offer_key for e in result.errors] == [only.key]
    assert shim.actions("CreateFleet") == [] and shim.actions("RunInstances")
    shim.exhausted.clear()
    ok = provisioner.launch_offers([(only, 1)], request_id="req-4")
    assert [_subnet_of(moto_ec2, i) for i in ok.instance_ids] == [a]


def test_from_config_builds_offers_from_instance_types_and_subnet_ids(moto_ec2: MotoEc2) -> None:
    cfg = parse_provider(
        {
            "type": "aws",
            "region": "us-east-1",
            "image_id": "ami-12345678",
            "ssh_key_name": "k",
            "instance_types": ["g5.xlarge", {"type": "g5.12xlarge", "price_per_hour": 5.0}],
            "network_interface": {"subnet_ids": ["subnet-a", "subnet-b"]},
            "spot": True,
            "spot_fallback_after": "10m",
        }
    )
    offers = pool_offers(cfg)
    assert [(o.instance_type, o.location, o.slots, o.spot, o.fallback) for o in offers[:4]] == [
        ("g5.xlarge", "subnet-a", 1, True, False),
        ("g5.xlarge", "subnet-b", 1, True, False),
        ("g5.12xlarge", "subnet-a", 4, True, False),
        ("g5.12xlarge", "subnet-b", 4, True, False),
    ]
    assert [o.fallback for o in offers[4:]] == [True] * 4
    assert offers[0].price_per_hour == 0.4  # the table's typical spot price
    assert offers[6].price_per_hour == 5.0  # the config's on-demand price wins over the table
