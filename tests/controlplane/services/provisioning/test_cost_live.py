"""What work cost, end to end on a live master with a fake agent and an in-memory cloud: the
provisioning loop stores the instance's price (its offer's, from the pool config) and life
(launch to termination), and the experiment's cost is its allocation's share, as computed by
hand from the stored times."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from controlplane.db.models import Allocation, ProvisionerInstance
from controlplane.db.session import make_engine, make_sessionmaker
from tests.controlplane.services.provisioning.test_loop_live import _start
from tests.controlplane.services.scheduling.conftest import (
    add_agent,
    allocations_on,
    experiment_yaml,
    submit,
    trial_of,
)
from tests.support.fake_agent import FakeAgent
from tests.support.fake_cloud import FakeCloud
from tests.support.live_master import StartMaster, eventually

PRICE = 0.34  # USD per hour of a 2-slot instance: $0.17 per slot-hour


def _provider() -> dict[str, Any]:
    return {
        "type": "aws",
        "region": "us-east-1",
        "image_id": "ami-12345678",
        "ssh_key_name": "key",
        "instance_types": [{"type": "c5.xlarge", "slots": 2, "price_per_hour": PRICE}],
        "min_instances": 0,
        "max_instances": 2,
        "max_idle_agent_period": "1s",
        "max_agent_starting_period": "60s",
        "master_url": "http://127.0.0.1:8080",
    }


async def _rows(db_url: str, model: Any) -> list[Any]:
    engine = make_engine(db_url)
    try:
        async with make_sessionmaker(engine)() as session:
            return list(await session.scalars(select(model)))
    finally:
        await engine.dispose()


async def test_the_loop_prices_instances_and_experiments_pay_their_share(
    start_master: StartMaster, agents: list[FakeAgent], db_url: str
) -> None:
    cloud = FakeCloud()
    m = await _start(start_master, cloud, provider=_provider())
    exp = (await submit(m, experiment_yaml("e", slots=2, pool="spot")))["experiment"]

    async def launched() -> list[Any]:
        return cloud.calls_of("launch")

    await eventually(launched, timeout=5)
    (instance_id,) = cloud.list_all_ids()
    cloud.mark_running(instance_id)

    async def recorded() -> list[Any]:
        return await _rows(db_url, ProvisionerInstance)

    (row,) = await eventually(recorded, timeout=5)
    assert (row.pool, row.agent_name, row.slots) == ("spot", instance_id, 2)
    assert (row.instance_type, row.price_per_hour, row.ended_at) == ("c5.xlarge", PRICE, None)

    agent = await add_agent(m, agents, instance_id, 2, pool="spot")
    (alloc,) = await allocations_on(agent)
    await agent.exit(agent.container_of(alloc), 0)

    async def completed() -> bool:
        return (await trial_of(m, exp["id"]))["state"] == "STATE_COMPLETED"

    await eventually(completed, timeout=5)

    async def ended() -> bool:
        rows = await _rows(db_url, ProvisionerInstance)
        return bool(rows) and rows[0].ended_at is not None

    await eventually(ended, timeout=10)  # idle for 1 s, terminated, no longer listed
    (row,) = await _rows(db_url, ProvisionerInstance)
    (allocation,) = await _rows(db_url, Allocation)
    assert allocation.placement == {instance_id: [0, 1]}
    # by hand: 2 slots x the time both the allocation and the instance lived x $0.17/slot-hour
    start = max(allocation.start_time, row.launched_at)
    end = min(allocation.end_time, row.ended_at)
    expected = 2 * (end - start).total_seconds() / 3600 * PRICE / 2
    cost = await m.get(f"/api/v1/experiments/{exp['id']}/cost")
    assert cost["total"]["cost"] == pytest.approx(expected, abs=1e-6)
    assert cost["total"]["unpricedSlotHours"] == 0.0
    assert cost["byResourcePool"]["spot"]["cost"] == cost["total"]["cost"]
