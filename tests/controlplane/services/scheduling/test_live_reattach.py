"""Reattachment: the containers the master lists on (re)connect, and what it makes of the acks
(reference §3.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from agent.protocol import ContainerFailure, ContainerState, FailureType
from controlplane.services.scheduling import agent_link
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    experiment_yaml,
    history_of,
    run_a_trial_then_stop_the_master,
    run_one_trial,
    seen_gone,
    submit,
    trial_of,
    trial_reaches,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually


def agent_shut_down(agent: FakeAgent):  # type: ignore[no-untyped-def]
    """The AgentShutdown that answers an AgentStarted arrives after the handshake."""

    async def check() -> bool:
        return agent.shutdown is not None

    return check


WAIT_30 = {"resource_pools": [{"pool_name": "default", "agent_reconnect_wait": 30}]}


async def _two_running(m: LiveMaster, agent: FakeAgent) -> tuple[list[int], list[str]]:
    ids = [(await submit(m, experiment_yaml(f"e{i}")))["experiment"]["id"] for i in range(2)]

    async def both() -> bool:
        return len(agent.allocations()) == 2

    await eventually(both, timeout=5)
    by_exp = []
    for exp_id in ids:
        task = (await trial_of(m, exp_id))["taskId"]
        by_exp.append(next(a for a in agent.allocations() if a.startswith(f"{task}.")))
    return ids, by_exp


async def test_options_list_the_containers_the_database_places_on_the_agent(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**WAIT_30)
    agent = await add_agent(m, agents, "a1", 2)
    _, allocs = await _two_running(m, agent)
    await agent.reconnect_now()
    assert agent.options is not None
    listed = {c.id: c for c in agent.options.containers_to_reattach}
    assert set(listed) == {f"{a}-0" for a in allocs}
    devices = sorted(d.id for c in listed.values() for d in c.devices)
    assert devices == [0, 1]
    assert all(c.state is ContainerState.RUNNING for c in listed.values())
    assert all(d.uuid.startswith("a1-") for c in listed.values() for d in c.devices)


async def test_acked_containers_are_kept_the_others_ended_for_free_and_killed(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**WAIT_30)
    agent = await add_agent(m, agents, "a1", 2)
    exps, (kept, lost) = await _two_running(m, agent)
    await agent.drop()
    await seen_gone(m, "a1")
    agent.running.discard(f"{lost}-0")  # the container vanished while the agent was away
    await agent.reconnect_now()

    async def lost_ended() -> bool:
        return (await history_of(m, lost))[-1][1] == "TERMINATED"

    await eventually(lost_ended, timeout=5)
    why = (await history_of(m, lost))[-1][2]
    assert "failed to reattach container on reconnect" in why
    assert f"{lost}-0" in [s.container_id for s in agent.signals]
    assert f"{kept}-0" not in [s.container_id for s in agent.signals]
    assert (await history_of(m, kept))[-1][1] == "RUNNING"
    requeued = await trial_of(m, exps[1])
    assert requeued["state"] == "STATE_ACTIVE" and requeued["restarts"] == 0

    async def restarted() -> bool:
        return any(a.startswith(requeued["taskId"]) and a != lost for a in agent.allocations())

    await eventually(restarted, timeout=5)


async def test_an_ack_with_a_failure_ends_the_container(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**WAIT_30)
    agent = await add_agent(m, agents, "a1", 2)
    exps, (_, broken) = await _two_running(m, agent)
    agent.reattach_failures[f"{broken}-0"] = ContainerFailure(
        type=FailureType.UNKNOWN_CONTAINER, message="no such container"
    )
    await agent.reconnect_now()

    async def ended() -> bool:
        return (await history_of(m, broken))[-1][1] == "TERMINATED"

    await eventually(ended, timeout=5)
    why = (await history_of(m, broken))[-1][2]
    assert "failed to reattach" in why and "no such container" in why
    assert (await trial_of(m, exps[1]))["restarts"] == 0


async def test_a_container_that_exited_while_away_is_an_ordinary_exit(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**WAIT_30)
    agent = await add_agent(m, agents, "a1", 2)
    (done_exp, failed_exp), (done, failed) = await _two_running(m, agent)
    agent.reattach_exits.update({f"{done}-0": 0, f"{failed}-0": 3})
    await agent.reconnect_now()

    async def settled() -> bool:
        a = await trial_of(m, done_exp)
        b = await trial_of(m, failed_exp)
        return a["state"] == "STATE_COMPLETED" and b["restarts"] == 1

    await eventually(settled, timeout=5)
    assert "container failed with non-zero exit code" in (await history_of(m, failed))[-1][2]
    sent = {s.container_id for s in agent.signals}
    assert f"{done}-0" not in sent and f"{failed}-0" not in sent


async def test_other_devices_on_reconnect_shut_the_agent_down_and_fail_its_work(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**WAIT_30)
    agent = await add_agent(m, agents, "a1", 1)
    exp, alloc = await run_one_trial(m, agent)
    await agent.drop()
    await seen_gone(m, "a1")
    agent.slots = 2
    await agent.reconnect_now()
    await eventually(agent_shut_down(agent), timeout=5)
    assert agent.shutdown is not None and "different devices" in agent.shutdown.error
    assert (await m.get("/api/v1/agents"))["agents"] == []
    trial = await trial_of(m, exp["id"])
    assert trial["state"] == "STATE_ACTIVE" and trial["restarts"] == 0
    assert (await history_of(m, alloc))[-1][1] == "TERMINATED"
    # A fresh start with the new devices is accepted and gets the trial back.
    agent.reconnect = False
    await agent.connect()
    assert agent.shutdown is None

    async def again() -> bool:
        return any(a != alloc for a in agent.allocations())

    await eventually(again, timeout=5)


async def test_after_a_master_restart_the_agent_reattaches_its_containers(
    start_master: StartMaster, agents: list[FakeAgent], db_url: str, tmp_path: Path
) -> None:
    agent, exp_id, alloc = await run_a_trial_then_stop_the_master(db_url, tmp_path, agents)
    m2 = await start_master(**WAIT_30)
    agent.ws_url = m2.ws_url
    await agent.reconnect_now()
    assert agent.shutdown is None
    assert agent.options is not None
    assert [c.id for c in agent.options.containers_to_reattach] == [f"{alloc}-0"]
    await agent.exit(f"{alloc}-0", 0)
    await trial_reaches(m2, exp_id, "STATE_COMPLETED")
    assert (await trial_of(m2, exp_id))["restarts"] == 0


async def test_a_master_restart_with_another_pool_for_the_agent_fails_its_work(
    start_master: StartMaster, agents: list[FakeAgent], db_url: str, tmp_path: Path
) -> None:
    pools = {
        "resource_pools": [
            {"pool_name": "default", "agent_reconnect_wait": 30},
            {"pool_name": "other", "agent_reconnect_wait": 30},
        ]
    }
    agent, exp_id, alloc = await run_a_trial_then_stop_the_master(db_url, tmp_path, agents, **pools)
    m2 = await start_master(**pools)
    agent.ws_url, agent.pool = m2.ws_url, "other"
    await agent.reconnect_now()
    await eventually(agent_shut_down(agent), timeout=5)
    assert agent.shutdown is not None and "runs in pool 'default'" in agent.shutdown.error
    assert (await trial_of(m2, exp_id))["restarts"] == 0
    assert (await history_of(m2, alloc))[-1][1] == "TERMINATED"


async def test_a_failed_reconciliation_leaves_the_agent_free_to_dial_again(
    start_master: StartMaster, agents: list[FakeAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = agent_link.apply_reattach
    calls = {"n": 0}

    async def flaky(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OperationalError("UPDATE", {}, Exception("connection reset"))
        return await real(*args, **kw)

    monkeypatch.setattr(agent_link, "apply_reattach", flaky)
    m = await start_master(**WAIT_30)
    agent = await add_agent(m, agents, "a1", 1)

    async def shown_away() -> bool:
        (a,) = (await m.get("/api/v1/agents"))["agents"]
        return a["connected"] is False

    await eventually(shown_away, timeout=5)
    await agent.reconnect_now()
    assert agent.shutdown is None
    (a,) = (await m.get("/api/v1/agents"))["agents"]
    assert a["connected"] is True


async def test_a_sigkill_found_by_the_agents_restart_is_no_restart_but_an_exit_1_is(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    """The agent and its tasks were killed at once: its next start finds the containers dead.
    A SIGKILL (137) then is the agent's loss, re-queued for free even with max_restarts 0; the
    task's own exit 1 found the same way still counts."""
    m = await start_master(**WAIT_30)
    agent = await add_agent(m, agents, "a1", 2)
    ids = []
    for name in ("killed", "crashed"):
        config = experiment_yaml(name) + "\nmax_restarts: 0\n"
        ids.append((await submit(m, config))["experiment"]["id"])

    async def both() -> bool:
        return len(agent.allocations()) == 2

    await eventually(both, timeout=5)
    tasks = [(await trial_of(m, exp_id))["taskId"] for exp_id in ids]
    killed, crashed = (next(a for a in agent.allocations() if a.startswith(f"{t}.")) for t in tasks)
    await agent.drop()
    await seen_gone(m, "a1")
    for alloc, code in ((killed, 137), (crashed, 1)):
        agent.running.discard(f"{alloc}-0")
        agent.reattach_failures[f"{alloc}-0"] = ContainerFailure(
            type=FailureType.CONTAINER_FAILED, exit_code=code, agent_restarted=True
        )
    await agent.reconnect_now()

    async def settled() -> bool:
        return (await trial_of(m, ids[1]))["state"] == "STATE_ERROR"

    await eventually(settled, timeout=5)
    assert (await trial_of(m, ids[1]))["restarts"] == 1
    requeued = await trial_of(m, ids[0])
    assert requeued["state"] == "STATE_ACTIVE" and requeued["restarts"] == 0

    async def again() -> bool:
        return any(a.startswith(f"{tasks[0]}.") and a != killed for a in agent.allocations())

    await eventually(again, timeout=5)
