"""Offers on a live master with the real cloud clients: an AWS pool over two subnets against
moto, with InsufficientInstanceCapacity injected on the wire for one; a GCP pool over two zones
against the fake GCE, one zone out of resources; a budget that holds work back. The pool gets
its capacity from the next offer within one tick and the reason is recorded and shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli.commands.conftest import det_for, ok
from tests.controlplane.services.scheduling.conftest import experiment_yaml, submit
from tests.support.ec2_capacity_shim import Ec2CapacityShim
from tests.support.fake_gce import FakeGCE
from tests.support.live_master import LiveMaster, StartMaster, eventually
from tests.support.moto_server import MotoEc2, fresh_moto

ICE = "InsufficientInstanceCapacity"


@pytest.fixture
def moto_ec2(monkeypatch: pytest.MonkeyPatch) -> MotoEc2:
    return fresh_moto(monkeypatch)


@pytest.fixture
def shim(moto_ec2: MotoEc2) -> Iterator[Ec2CapacityShim]:
    running = Ec2CapacityShim(moto_ec2.endpoint).start()
    yield running
    running.stop()


@pytest.fixture
def gce() -> Iterator[FakeGCE]:
    with FakeGCE(polls_to_done=1) as fake:
        yield fake


async def _start(start_master: StartMaster, provider: dict[str, Any]) -> LiveMaster:
    return await start_master(
        provisioner_interval_s=0.2,
        resource_pools=[{"pool_name": "gpus", "provider": provider}],
        resource_manager={
            "default_compute_resource_pool": "gpus",
            "default_aux_resource_pool": "gpus",
        },
    )


async def _view(m: LiveMaster) -> dict[str, Any]:
    return await m.get("/api/v1/resource-pools/gpus/provisioner")


async def test_aws_fleet_fails_over_to_the_next_subnet_and_describe_shows_why(
    start_master: StartMaster, moto_ec2: MotoEc2, shim: Ec2CapacityShim
) -> None:
    ec2 = moto_ec2.client()
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    a, b = (
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9.{n}.0/24", AvailabilityZone=az)["Subnet"][
            "SubnetId"
        ]
        for n, az in ((1, "us-east-1a"), (2, "us-east-1b"))
    )
    shim.exhausted[a] = ICE
    m = await _start(
        start_master,
        {
            "type": "aws",
            "region": moto_ec2.region,
            "endpoint_url": shim.endpoint,
            "image_id": moto_ec2.image_id,
            "ssh_key_name": "agents",
            "instance_types": ["g4dn.xlarge"],
            "network_interface": {"subnet_ids": [a, b]},
            "max_instances": 2,
            "max_agent_starting_period": "5m",
            "master_url": "http://127.0.0.1:8080",
        },
    )
    await submit(m, experiment_yaml("e", slots=1, pool="gpus"))

    async def launched() -> list[str]:
        return moto_ec2.live_instance_ids()

    (instance_id,) = await eventually(launched, timeout=15)
    assert moto_ec2.describe(instance_id)["SubnetId"] == b
    assert len(shim.actions("CreateFleet")) == 1, "one fleet call got it from the next subnet"

    async def cold_shown() -> dict[str, Any]:
        view = await _view(m)
        kinds = {d["kind"] for d in view["decisions"]}
        cold = any(o["coldUntil"] for o in view["offers"])
        return view if cold and "launched" in kinds and view["hourlyCost"] else {}

    view = await eventually(cold_shown, timeout=10)
    by_key = {o["key"]: o for o in view["offers"]}
    assert ICE in by_key[f"g4dn.xlarge@{a}/on-demand"]["lastError"]
    assert by_key[f"g4dn.xlarge@{b}/on-demand"]["coldUntil"] is None
    kinds = [d["kind"] for d in view["decisions"]]
    assert "offer_cold" in kinds and "launched" in kinds
    assert view["hourlyCost"] == pytest.approx(0.526)  # one g4dn.xlarge at the table's price
    out = ok(await det_for(m)("resource-pool", "describe", "gpus"))
    assert "Offers" in out and ICE in out and "Cold Until" in out


async def test_gcp_zone_out_of_resources_fails_over_to_the_next_zone_within_one_tick(
    start_master: StartMaster, gce: FakeGCE
) -> None:
    gce.exhausted_zones["zone-a"] = "ZONE_RESOURCE_POOL_EXHAUSTED"
    m = await _start(
        start_master,
        {
            "type": "gcp",
            "project": "proj",
            "zones": ["zone-a", "zone-b"],
            "api_endpoint": gce.endpoint,
            "instance_type": {"machine_type": "n1-standard-8", "gpu_type": "nvidia-tesla-t4",
                              "gpu_num": 1},
            "max_instances": 2,
            "max_agent_starting_period": "5m",
            "master_url": "http://127.0.0.1:8080",
        },
    )  # fmt: skip
    await submit(m, experiment_yaml("e", slots=1, pool="gpus"))

    async def created() -> bool:
        return len(gce.instances()) == 1

    await eventually(created, timeout=15)
    paths = [(r.method, r.path) for r in gce.requests]
    inserts = [i for i, (verb, path) in enumerate(paths) if path.endswith("/bulkInsert")]
    assert [paths[i][1].split("/")[6] for i in inserts] == ["zone-a", "zone-b"]
    between = paths[inserts[0] + 1 : inserts[1]]
    # nothing but the failed operation's polls: no listing, so no new tick, came in between
    assert all("/operations/" in path for _, path in between), between

    async def reason_recorded() -> dict[str, Any]:
        view = await _view(m)
        cold = [d for d in view["decisions"] if d["kind"] == "offer_cold"]
        return view if cold else {}

    view = await eventually(reason_recorded, timeout=10)
    (cold,) = [d for d in view["decisions"] if d["kind"] == "offer_cold"]
    assert "ZONE_RESOURCE_POOL_EXHAUSTED" in cold["reason"] and "zone-a" in cold["reason"]


async def test_a_budget_holds_work_back_and_the_waiting_job_says_why(
    start_master: StartMaster, gce: FakeGCE
) -> None:
    m = await _start(
        start_master,
        {
            "type": "gcp",
            "project": "proj",
            "zone": "zone-a",
            "api_endpoint": gce.endpoint,
            "instance_type": {"machine_type": "n1-standard-8", "gpu_type": "nvidia-tesla-t4",
                              "gpu_num": 1},
            "max_hourly_cost": 0.5,
            "master_url": "http://127.0.0.1:8080",
        },
    )  # fmt: skip
    # two 1-slot trials: at $0.73/h per instance the budget of $0.50/h allows none
    await submit(m, experiment_yaml("e", slots=1, pool="gpus"))

    async def job_says_why() -> str:
        jobs = (await m.get("/api/v1/job-queues-v2"))["jobs"]
        reason = jobs[0]["full"]["waitReason"] if jobs else ""
        return reason if "max_hourly_cost" in reason else ""

    reason = await eventually(job_says_why, timeout=10)
    assert "$0.5/h" in reason
    assert gce.bulk_inserts == []
    view = json.loads(ok(await det_for(m)("rp", "describe", "gpus", "--json")))
    assert "max_hourly_cost" in view["provisioner"]["waitingReason"]
    assert view["provisioner"]["maxHourlyCost"] == 0.5
    # waiting for the budget is no launch failure: the sticky launch error's streak stays empty
    kinds = {d["kind"] for d in view["provisioner"]["decisions"]}
    assert "waiting_for_offer" in kinds and "launch_failed" not in kinds
