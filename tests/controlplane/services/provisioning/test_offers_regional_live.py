"""A GCP pool over zones of two regions on a live master against the fake GCE: the zones of
one region are asked in one regional bulkInsert with a location policy; when no zone there has
room, every one of them goes cold and the next region's zone is asked, within one tick."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.controlplane.services.scheduling.conftest import experiment_yaml, submit
from tests.support.fake_gce import FakeGCE
from tests.support.live_master import StartMaster, eventually


@pytest.fixture
def gce() -> Iterator[FakeGCE]:
    with FakeGCE(polls_to_done=1) as fake:
        yield fake


async def test_a_region_out_of_resources_fails_over_to_the_next_region_within_one_tick(
    start_master: StartMaster, gce: FakeGCE
) -> None:
    for zone in ("us-central1-a", "us-central1-b"):
        gce.exhausted_zones[zone] = "ZONE_RESOURCE_POOL_EXHAUSTED"
    provider = {
        "type": "gcp",
        "project": "proj",
        "zones": ["us-central1-a", "us-central1-b", "us-east1-c"],
        "api_endpoint": gce.endpoint,
        "instance_type": {"machine_type": "n1-standard-8", "gpu_type": "nvidia-tesla-t4",
                          "gpu_num": 1},
        "max_instances": 2,
        "max_agent_starting_period": "5m",
        "master_url": "http://127.0.0.1:8080",
    }  # fmt: skip
    m = await start_master(
        provisioner_interval_s=0.2,
        resource_pools=[{"pool_name": "gpus", "provider": provider}],
        resource_manager={
            "default_compute_resource_pool": "gpus",
            "default_aux_resource_pool": "gpus",
        },
    )
    await submit(m, experiment_yaml("e", slots=1, pool="gpus"))

    async def created() -> bool:
        return len(gce.instances()) == 1

    await eventually(created, timeout=15)
    (instance,) = gce.instances()
    assert instance["zone"].endswith("/zones/us-east1-c")
    inserts = [r.path for r in gce.requests if r.path.endswith("/bulkInsert")]
    assert inserts == [
        "/compute/v1/projects/proj/regions/us-central1/instances/bulkInsert",
        "/compute/v1/projects/proj/zones/us-east1-c/instances/bulkInsert",
    ]
    assert gce.regional_bulk_inserts == [("us-central1", ["us-central1-a", "us-central1-b"])]

    async def reasons() -> dict[str, Any]:
        # the launch is recorded once its operation is done: the master is idle after it
        view = await m.get("/api/v1/resource-pools/gpus/provisioner")
        kinds = [d["kind"] for d in view["decisions"]]
        return view if kinds.count("offer_cold") == 2 and "launched" in kinds else {}

    view = await eventually(reasons, timeout=10)
    cold = [d["reason"] for d in view["decisions"] if d["kind"] == "offer_cold"]
    assert all("ZONE_RESOURCE_POOL_EXHAUSTED" in reason for reason in cold)
    assert sorted(reason.split("@")[1].split("/")[0] for reason in cold) == [
        "us-central1-a",
        "us-central1-b",
    ]
