"""Agents that stop answering or never come back: liveness, the reconnect wait, and the
re-queueing of their work without using up max_restarts (reference §3.3, §4.8)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from controlplane.config import MasterSettings
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    allocations_on,
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
from tests.support.live_master import eventually

QUICK: dict[str, Any] = {
    "agent_heartbeat_interval_s": 0.2,
    "agent_liveness_timeout_s": 1.0,
    "resource_pools": [{"pool_name": "default", "agent_reconnect_wait": 1}],
}


def test_defaults_mark_a_silent_agent_lost_within_30_seconds() -> None:
    settings = MasterSettings()
    assert settings.agent_heartbeat_interval_s == 5.0
    assert settings.agent_liveness_timeout_s == 20.0
    assert settings.agent_liveness_timeout_s + settings.scheduling_interval_s <= 30


async def test_the_master_sends_its_liveness_settings(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(agent_heartbeat_interval_s=0.5, agent_liveness_timeout_s=3)
    agent = await add_agent(m, agents, "a1", 1)
    assert agent.options is not None
    assert (agent.options.heartbeat_interval_s, agent.options.liveness_timeout_s) == (0.5, 3.0)


async def test_heartbeats_keep_an_idle_agent_connected(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**QUICK)
    await add_agent(m, agents, "a1", 1)
    await asyncio.sleep(2.5)  # more than twice the liveness timeout, with heartbeats only
    (a,) = (await m.get("/api/v1/agents"))["agents"]
    assert a["connected"] is True and a["enabled"] is True and a["draining"] is False


async def test_silent_agent_is_lost_and_its_trial_requeued_elsewhere_without_a_restart(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**QUICK)
    a1 = await add_agent(m, agents, "a1", 1)
    exp, first = await run_one_trial(m, a1)
    a2 = await add_agent(m, agents, "a2", 1)
    await a1.go_silent()

    async def shown_lost() -> bool:
        view = (await m.get("/api/v1/agents/a1"))["agent"]
        return not view["connected"] and not view["enabled"] and view["draining"]

    await eventually(shown_lost, timeout=5)
    (second,) = await allocations_on(a2, timeout=10)
    assert second != first and second.endswith(".2")
    trial = await trial_of(m, exp["id"])
    assert trial["state"] == "STATE_ACTIVE" and trial["restarts"] == 0
    *_, (old, new, why) = await history_of(m, first)
    assert (old, new) == ("RUNNING", "TERMINATED")
    assert "agent failed while container was running" in why and "agent a1 was lost" in why

    async def forgotten() -> bool:
        ids = [a["id"] for a in (await m.get("/api/v1/agents"))["agents"]]
        return ids == ["a2"]

    await eventually(forgotten, timeout=5)


async def test_agent_back_within_the_wait_keeps_its_work(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(
        **{**QUICK, "resource_pools": [{"pool_name": "default", "agent_reconnect_wait": 30}]}
    )
    a1 = await add_agent(m, agents, "a1", 1)
    exp, alloc = await run_one_trial(m, a1)
    await m.post("/api/v1/agents/a1/disable", {"drain": True})
    await a1.drop()
    await seen_gone(m, "a1")
    await a1.reconnect_now()
    assert a1.shutdown is None
    view = (await m.get("/api/v1/agents/a1"))["agent"]
    # Back with its previous state (disabled, draining by the user) and its container.
    assert (view["connected"], view["enabled"], view["draining"]) == (True, False, True)
    assert [c["parent"] for c in view["containers"].values()] == [alloc]
    await a1.exit(a1.container_of(alloc), 0)
    await trial_reaches(m, exp["id"], "STATE_COMPLETED")


async def test_after_a_master_restart_an_agent_that_never_returns_is_given_up(
    start_master: StartMaster, agents: list[FakeAgent], db_url: str, tmp_path: Path
) -> None:
    _, exp_id, first = await run_a_trial_then_stop_the_master(db_url, tmp_path, agents)
    m2 = await start_master(**QUICK)
    a2 = await add_agent(m2, agents, "a2", 1)
    phantom = {a["id"] for a in (await m2.get("/api/v1/agents"))["agents"]}
    assert phantom == {"a2"}
    (second,) = await allocations_on(a2, timeout=10)
    assert second != first
    trial = await trial_of(m2, exp_id)
    assert trial["state"] == "STATE_ACTIVE" and trial["restarts"] == 0
    *_, (_, new, why) = await history_of(m2, first)
    assert new == "TERMINATED" and "of the master's start" in why


async def test_late_reconnect_is_told_to_restart_afresh(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**QUICK)
    await asyncio.sleep(1.2)  # past the reconnect wait since the master's start
    late = await add_agent(m, agents, "a1", 1, reconnect=True)
    assert late.shutdown is not None and "past its reconnect period" in late.shutdown.error
    assert (await m.get("/api/v1/agents"))["agents"] == []
    fresh = await add_agent(m, agents, "a1", 1)
    assert fresh.shutdown is None


async def test_reconnect_right_after_a_master_start_is_welcome(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(resource_pools=[{"pool_name": "default", "agent_reconnect_wait": 30}])
    agent = await add_agent(m, agents, "a1", 1, reconnect=True)
    assert agent.shutdown is None
    assert [a["id"] for a in (await m.get("/api/v1/agents"))["agents"]] == ["a1"]


async def test_losing_one_agent_of_a_multi_agent_allocation_kills_the_rest(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(**QUICK)
    a1 = await add_agent(m, agents, "a1", 1)
    a2 = await add_agent(m, agents, "a2", 1)
    exp = (await submit(m, experiment_yaml("e", slots=2)))["experiment"]

    async def on_both() -> bool:
        return len(a1.allocations()) == 1 and a1.allocations() == a2.allocations()

    await eventually(on_both, timeout=5)
    (alloc,) = a1.allocations()
    await a1.go_silent()

    async def rest_killed() -> bool:
        return [s.container_id for s in a2.signals] == [f"{alloc}-1"]

    await eventually(rest_killed, timeout=10)
    trial = await trial_of(m, exp["id"])
    assert trial["state"] == "STATE_ACTIVE" and trial["restarts"] == 0
    assert "agent a1 was lost" in (await history_of(m, alloc))[-1][2]
