"""`det resource-pool describe` of a pool with a provider: instances with state and age, the
recent scaling decisions with their reasons, and the launch error."""

from __future__ import annotations

import json
from typing import Any

from provisioners.base import LaunchFailure, LaunchFailureKind
from tests.cli.commands.conftest import StartMaster, det_for, eventually, ok, submit
from tests.controlplane.services.scheduling.conftest import experiment_yaml
from tests.support.fake_cloud import FakeCloud, FakeProvisioner

PROVIDER = {
    "type": "gcp",
    "project": "proj",
    "zone": "us-central1-a",
    "instance_type": {"machine_type": "n1-standard-8", "gpu_type": "nvidia-tesla-t4", "gpu_num": 2},
    "max_instances": 3,
    "launch_error_timeout": "60s",
    "launch_error_retries": 1,
    "master_url": "http://127.0.0.1:8080",
}


async def _master(start_master: StartMaster, cloud: FakeCloud) -> Any:
    def factory(cfg: Any, pool: str, master_url: str) -> FakeProvisioner:
        return FakeProvisioner(cloud, pool, 2)

    return await start_master(
        app_options={"provisioner_factory": factory},
        provisioner_interval_s=0.2,
        resource_pools=[{"pool_name": "gpus", "provider": PROVIDER}],
        resource_manager={
            "default_compute_resource_pool": "gpus",
            "default_aux_resource_pool": "gpus",
        },
    )


async def test_describe_shows_instances_decisions_and_launch_errors(
    start_master: StartMaster,
) -> None:
    cloud = FakeCloud()
    m = await _master(start_master, cloud)
    await submit(m, experiment_yaml("e", slots=4, pool="gpus"))

    async def two_launched() -> bool:
        return cloud.live_count() == 2

    await eventually(two_launched, timeout=10)

    async def both_listed() -> bool:  # by a tick after the launch
        view = await m.get("/api/v1/resource-pools/gpus/provisioner")
        return len(view["instances"]) == 2

    await eventually(both_listed, timeout=10)
    det = det_for(m)
    out = ok(await det("resource-pool", "describe", "gpus"))
    assert "Provisioner" in out and "gcp" in out and "0/3" in out
    for instance_id in cloud.list_all_ids():
        assert instance_id in out
    assert "Starting" in out and "not connected" in out
    assert "launched" in out and "for unscheduled work" in out

    # Launches start failing: the error shows with how long it stays.
    cloud.fail_every_launch(LaunchFailure(LaunchFailureKind.QUOTA, "VcpuLimitExceeded: 0 left"))
    await submit(m, experiment_yaml("f", slots=2, pool="gpus"))

    async def failing() -> dict[str, Any]:
        view = json.loads(ok(await det("resource-pool", "describe", "gpus", "--json")))
        failed = [d for d in view["provisioner"]["decisions"] if d["kind"] == "launch_failed"]
        return view if len(failed) >= 2 else {}

    view = await eventually(failing, timeout=10)
    assert "VcpuLimitExceeded" in view["provisioner"]["launchError"]
    assert view["provisioner"]["launchErrorUntil"]
    out = ok(await det("rp", "describe", "gpus"))
    assert "VcpuLimitExceeded" in out and "Launch Error Until" in out


async def test_a_static_pool_has_no_provisioner_section(start_master: StartMaster) -> None:
    m = await start_master()
    out = ok(await det_for(m)("resource-pool", "describe", "default"))
    assert "Provisioner" not in out
