"""An agent's interruption notice: the master drains the agent and preempts its allocations at
once; the acknowledged preemption re-queues the trial on another agent without a restart."""

from __future__ import annotations

from datetime import UTC, datetime

from agent.protocol import InterruptionNotice, encode
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    allocations_on,
    experiment_yaml,
    history_of,
    run_one_trial,
    trial_of,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually

NOTICE = InterruptionNotice(
    cloud="aws", action="terminate", deadline=datetime(2030, 1, 1, tzinfo=UTC)
)


def _task_headers(agent: FakeAgent, allocation_id: str) -> dict[str, str]:
    start = agent.started[agent.container_of(allocation_id)]
    return {
        "Grpc-Metadata-x-allocation-token": f"Bearer {start.spec.environment['DET_SESSION_TOKEN']}"
    }


async def _preempt_signal(m: LiveMaster, agent: FakeAgent, allocation_id: str) -> bool:
    r = await m.http.get(
        f"/api/v1/allocations/{allocation_id}/signals/preemption",
        params={"timeoutSeconds": 5},
        headers=_task_headers(agent, allocation_id),
    )
    assert r.status_code == 200, r.text
    return bool(r.json()["preempt"])


async def test_a_notice_drains_the_agent_and_its_trial_moves_elsewhere(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    spot = await add_agent(m, agents, "i-0spot", 1)
    exp, alloc = await run_one_trial(m, spot)

    await spot.send_raw(encode(NOTICE))

    async def draining() -> bool:
        view = (await m.get("/api/v1/agents/i-0spot"))["agent"]
        return view["draining"] is True and view["enabled"] is False

    await eventually(draining, timeout=5)
    assert await _preempt_signal(m, spot, alloc) is True
    assert any("interruption notice" in reason for _, _, reason in await history_of(m, alloc))

    # A repeated notice (the agent re-sends it after a reconnect) changes nothing.
    await spot.send_raw(encode(NOTICE))

    # The harness checkpoints, acknowledges and exits 0; the trial waits for another agent.
    r = await m.http.post(
        f"/api/v1/allocations/{alloc}/signals/ack_preemption", headers=_task_headers(spot, alloc)
    )
    assert r.status_code == 200
    await spot.exit(spot.container_of(alloc), 0)
    spare = await add_agent(m, agents, "i-0spare", 1)
    (again,) = await allocations_on(spare)
    assert again != alloc and again.startswith(alloc.rsplit(".", 1)[0] + ".")
    trial = await trial_of(m, exp["id"])
    assert trial["state"] == "STATE_ACTIVE" and trial["restarts"] == 0
    assert spot.allocations() == set(), "nothing new is placed on a draining agent"
    assert [s.signal for s in spot.signals] == []


async def test_a_notice_on_an_idle_agent_only_drains_it(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    idle = await add_agent(m, agents, "vm-idle", 2)
    await idle.send_raw(encode(InterruptionNotice(cloud="gcp", action="preempt")))

    async def draining() -> bool:
        return (await m.get("/api/v1/agents/vm-idle"))["agent"]["draining"] is True

    await eventually(draining, timeout=5)


async def test_an_exit_after_the_notice_is_not_the_trials_fault(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    """The machine shuts down before the trial could checkpoint: its SIGTERM exit (143) is no
    restart, even with max_restarts 0; the trial waits for another agent."""
    m = await start_master()
    spot = await add_agent(m, agents, "i-0spot", 1)
    exp, alloc = await run_one_trial(m, spot, experiment_yaml("e") + "\nmax_restarts: 0\n")
    await spot.send_raw(encode(NOTICE))

    async def preempting() -> bool:
        return any("interruption notice" in r for _, _, r in await history_of(m, alloc))

    await eventually(preempting, timeout=5)
    await spot.exit(spot.container_of(alloc), 143)

    async def ended() -> bool:
        return (await history_of(m, alloc))[-1][1] == "TERMINATED"

    await eventually(ended, timeout=5)
    trial = await trial_of(m, exp["id"])
    assert trial["state"] == "STATE_ACTIVE" and trial["restarts"] == 0
