"""The master's provisioning loop on a live master with fake agents and an in-memory cloud:
scale up on unmet demand, down when idle, repair after a crash, fall back when spot capacity
cannot be had, prune what can never run while launches fail (reference §2.1 to §2.4)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from controlplane.db.models import ProvisionerLaunch
from provisioners.base import LaunchFailure, LaunchFailureKind
from tests.controlplane.services.scheduling.conftest import (
    add_agent,
    allocations_on,
    experiment_yaml,
    submit,
    trial_of,
)
from tests.support.fake_agent import FakeAgent
from tests.support.fake_cloud import FakeCloud, FakeProvisioner
from tests.support.live_master import LiveMaster, StartMaster, eventually


def _provider(**extra: Any) -> dict[str, Any]:
    return {
        "type": "aws",
        "region": "us-east-1",
        "image_id": "ami-12345678",
        "ssh_key_name": "key",
        "instance_type": "c5.xlarge",
        "instance_slots": 2,
        "min_instances": 0,
        "max_instances": 2,
        "max_idle_agent_period": "1s",
        "max_agent_starting_period": "60s",
        "master_url": "http://127.0.0.1:8080",
        **extra,
    }


async def _start(
    start_master: StartMaster,
    cloud: FakeCloud,
    *,
    provider: dict[str, Any] | None = None,
    static_pool: str | None = None,
) -> LiveMaster:
    pools: list[dict[str, Any]] = [{"pool_name": "spot", "provider": provider or _provider()}]
    if static_pool is not None:
        pools.append({"pool_name": static_pool})
    made: dict[str, FakeProvisioner] = {}

    def factory(cfg: Any, pool: str, master_url: str) -> FakeProvisioner:
        made[pool] = FakeProvisioner(cloud, pool, 2)
        return made[pool]

    return await start_master(
        app_options={"provisioner_factory": factory},
        provisioner_interval_s=0.2,
        resource_pools=pools,
        resource_manager={
            "default_compute_resource_pool": "spot",
            "default_aux_resource_pool": static_pool or "spot",
        },
    )


async def _view(m: LiveMaster) -> dict[str, Any]:
    return await m.get("/api/v1/resource-pools/spot/provisioner")


async def test_scales_up_for_waiting_work_and_down_when_idle(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    cloud = FakeCloud()
    m = await _start(start_master, cloud)
    assert (await _view(m))["instances"] == []
    exp = (await submit(m, experiment_yaml("e", slots=2, pool="spot")))["experiment"]

    async def launched() -> list[Any]:
        return cloud.calls_of("launch")

    (call,) = await eventually(launched, timeout=5)
    assert call.count == 1  # 2 slots on instances of 2 slots: one instance
    (instance_id,) = cloud.list_all_ids()
    cloud.mark_running(instance_id)
    agent = await add_agent(m, agents, instance_id, 2, pool="spot")
    (alloc,) = await allocations_on(agent)
    await agent.exit(agent.container_of(alloc), 0)

    async def completed() -> bool:
        return (await trial_of(m, exp["id"]))["state"] == "STATE_COMPLETED"

    await eventually(completed, timeout=5)

    async def gone() -> bool:
        return cloud.live_count() == 0

    try:
        await eventually(gone, timeout=10)  # idle for max_idle_agent_period (1 s), then gone
    except AssertionError:
        print("VIEW", await _view(m), m.app.state["api"].provisioning.pools["spot"].state)
        raise
    view = await _view(m)
    kinds = [d["kind"] for d in view["decisions"]]
    assert "launched" in kinds and "terminate" in kinds
    terminate = next(d for d in view["decisions"] if d["kind"] == "terminate")
    assert "long idle" in terminate["reason"] and terminate["instanceIds"] == [instance_id]
    assert len(cloud.calls_of("launch")) == 1, "no second launch while the first was starting"


async def test_a_launch_stored_before_a_crash_is_repeated_with_its_request_id(
    start_master: StartMaster,
) -> None:
    cloud = FakeCloud()
    m = await _start(start_master, cloud)
    # The master stored the request and the cloud acted on it, but the master died before it
    # heard the answer.
    sessionmaker = m.app.state["api"].sessionmaker
    async with sessionmaker() as session:
        session.add(
            ProvisionerLaunch(
                request_id="req-before-crash",
                pool="spot",
                count=1,
                state="pending",
                instance_ids={},
                requested_at=datetime.now(UTC),
            )
        )
        await session.commit()
    provisioner = m.app.state["api"].provisioning.pools["spot"].provisioner
    (first,) = provisioner.launch(1, request_id="req-before-crash")

    await m.app.state["api"].provisioning.tick("spot")

    assert cloud.list_all_ids() == [first], "the repeated call created nothing new"
    async with sessionmaker() as session:
        row = await session.get(ProvisionerLaunch, "req-before-crash")
        assert row is not None and row.state == "done"
        assert row.instance_ids == {"ids": [first]}
        left = await session.scalars(
            select(ProvisionerLaunch).where(ProvisionerLaunch.state == "pending")
        )
        assert list(left) == []


async def test_spot_capacity_that_cannot_be_had_moves_work_to_the_fallback_pool(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    cloud = FakeCloud()
    cloud.fail_every_launch(
        LaunchFailure(LaunchFailureKind.CAPACITY, "InsufficientInstanceCapacity: none left")
    )
    m = await _start(
        start_master, cloud, provider=_provider(fallback_pool="ondemand"), static_pool="ondemand"
    )
    ondemand = await add_agent(m, agents, "od-1", 2, pool="ondemand")
    exp = (await submit(m, experiment_yaml("e", slots=2, pool="spot")))["experiment"]

    (alloc,) = await allocations_on(ondemand, timeout=10)
    assert alloc
    view = await _view(m)
    fallback = [d for d in view["decisions"] if d["kind"] == "fallback"]
    assert fallback and "ondemand" in fallback[0]["reason"]
    assert "capacity" in fallback[0]["reason"]
    trial = await trial_of(m, exp["id"])
    logs = await m.get(f"/api/v1/trials/{trial['id']}/logs")
    text = str(logs)
    assert "cannot get capacity" in text and "ondemand" in text


async def test_while_launches_fail_work_no_instance_can_hold_is_pruned(
    start_master: StartMaster,
) -> None:
    cloud = FakeCloud()
    cloud.fail_every_launch(LaunchFailure(LaunchFailureKind.CONFIG, "InvalidAMIID.Malformed"))
    m = await _start(
        start_master,
        cloud,
        provider=_provider(launch_error_timeout="30s", launch_error_retries=0),
    )
    exp = (await submit(m, experiment_yaml("e", slots=2, pool="spot")))["experiment"]

    async def errored() -> bool:
        return (await trial_of(m, exp["id"]))["state"] == "STATE_ERROR"

    await eventually(errored, timeout=10)
    view = await _view(m)
    assert view["launchError"] and "InvalidAMIID" in view["launchError"]
    assert len(cloud.calls_of("launch")) == 1, "no launch while the error shows"


async def test_a_static_pool_has_no_provisioner_view(start_master: StartMaster) -> None:
    m = await _start(start_master, FakeCloud(), static_pool="static")
    r = await m.http.get("/api/v1/resource-pools/static/provisioner", headers=m.admin)
    assert r.status_code == 404 and "no provider" in r.text
    r = await m.http.get("/api/v1/resource-pools/nope/provisioner", headers=m.admin)
    assert r.status_code == 404


async def test_a_spot_request_that_cannot_be_fulfilled_is_shown_on_the_waiting_job(
    start_master: StartMaster,
) -> None:
    cloud = FakeCloud()
    m = await _start(start_master, cloud)
    exp = (await submit(m, experiment_yaml("e", slots=2, pool="spot")))["experiment"]

    async def launched() -> list[str]:
        return cloud.list_all_ids()

    (request,) = await eventually(launched, timeout=5)
    cloud.set_problem(request, "capacity-not-available: There is no Spot capacity available")

    async def job_says_why() -> str:
        jobs = (await m.get("/api/v1/job-queues-v2"))["jobs"]
        reason = jobs[0]["full"]["waitReason"] if jobs else ""
        return reason if "cannot get capacity" in reason else ""

    reason = await eventually(job_says_why, timeout=5)
    assert "capacity-not-available" in reason
    trial = await trial_of(m, exp["id"])
    logs = str(await m.get(f"/api/v1/trials/{trial['id']}/logs"))
    assert "cannot get capacity" in logs and "no Spot capacity" in logs
    view = await _view(m)
    assert view["instances"][0]["problem"].startswith("capacity-not-available")
    assert any(d["kind"] == "instance_problem" for d in view["decisions"])

    cloud.set_problem(request, None)  # AWS found capacity: the note goes away

    async def cleared() -> bool:
        jobs = (await m.get("/api/v1/job-queues-v2"))["jobs"]
        return bool(jobs) and "cannot get capacity" not in jobs[0]["full"]["waitReason"]

    await eventually(cleared, timeout=5)


async def test_a_job_larger_than_the_pool_can_ever_grow_is_refused(
    start_master: StartMaster,
) -> None:
    """max_instances 2 times instance_slots 2: the pool never holds more than 4 slots, so a trial or
    a command asking more is refused at submission (Determined's launch_error), not queued."""
    cloud = FakeCloud()
    m = await _start(start_master, cloud)
    body = await submit(m, experiment_yaml("big", slots=5, pool="spot"), expect=400)
    assert "slots requested exceeds cluster capacity" in body["message"]
    assert "max_instances 2 × 2 slots per instance" in body["message"]
    config = {"entrypoint": ["true"], "resources": {"slots": 6, "resource_pool": "spot"}}
    body = await m.post("/api/v1/commands", {"config": config}, 400)
    assert "slots requested exceeds cluster capacity" in body["message"]
    assert (await m.get("/api/v1/experiments"))["experiments"] == []
    assert cloud.calls_of("launch") == []
    # What the pool can hold once grown is accepted, and the provisioner grows it.
    await submit(m, experiment_yaml("fits", slots=4, pool="spot"))

    async def launched() -> list[Any]:
        return cloud.calls_of("launch")

    (call,) = await eventually(launched, timeout=5)
    assert call.count == 2
