"""The agent protocol's bad inputs: each is refused with a reason, and nothing is registered."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from agent.protocol import AgentShutdown, decode_to_agent
from agent.protocol import ContainerState as C
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    experiment_yaml,
    history_of,
    submit,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually


@pytest.mark.parametrize(
    ("agent_id", "pool", "reason"),
    [
        ("../etc", "default", "invalid agent id"),
        ("", "default", "invalid agent id"),
        ("a" * 300, "default", "invalid agent id"),
        ("ok-agent", "gpu-pool", "resource pool 'gpu-pool' does not exist"),
    ],
)
async def test_bad_hello_is_refused(
    start_master: StartMaster, agents: list[FakeAgent], agent_id: str, pool: str, reason: str
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, agent_id, 1, pool=pool)
    assert agent.shutdown is not None and reason in agent.shutdown.error
    assert (await m.get("/api/v1/agents"))["agents"] == []


async def test_second_connection_with_a_live_id_is_refused_and_the_first_keeps_working(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    first = await add_agent(m, agents, "a1", 1)
    second = await add_agent(m, agents, "a1", 4)
    assert second.shutdown is not None and "already connected" in second.shutdown.error
    await submit(m, experiment_yaml(slots=1))

    async def placed() -> bool:
        return len(first.started) == 1

    await eventually(placed, timeout=5)
    (listed,) = (await m.get("/api/v1/agents"))["agents"]
    assert len(listed["slots"]) == 1


async def test_first_message_must_be_agent_started(start_master: StartMaster) -> None:
    m = await start_master()
    async with connect(f"{m.ws_url}/agents?id=x1&resource_pool=default") as ws:
        decode_to_agent(await ws.recv())  # MasterSetAgentOptions
        await ws.send(
            json.dumps({"ContainerLog": {"container_id": "c", "timestamp": 0, "message": "hi"}})
        )
        reply = decode_to_agent(await ws.recv())
        assert isinstance(reply, AgentShutdown) and "expected AgentStarted" in reply.error
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
    assert (await m.get("/api/v1/agents"))["agents"] == []


@pytest.mark.parametrize(
    "frame",
    [
        "not json",
        "[]",
        json.dumps({"AgentStarted": {"version": "t"}, "ContainerLog": {}}),
        json.dumps({"Bogus": {}}),
        json.dumps({"AgentStarted": {"version": "t", "devices": [{"id": -1}]}}),
    ],
)
async def test_malformed_handshake_is_refused(start_master: StartMaster, frame: str) -> None:
    m = await start_master()
    async with connect(f"{m.ws_url}/agents?id=x1&resource_pool=default") as ws:
        decode_to_agent(await ws.recv())
        await ws.send(frame)
        reply = decode_to_agent(await ws.recv())
        assert isinstance(reply, AgentShutdown)
    assert (await m.get("/api/v1/agents"))["agents"] == []


async def test_garbage_after_registration_is_ignored_and_unknown_containers_are_killed(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    await agent.send_raw("{{{")
    await agent.send_raw(json.dumps({"Nope": {}}))
    stray = {
        "ContainerStateChanged": {
            "container": {"id": "stray-0", "state": "RUNNING"},
            "allocation_id": "no-such-allocation",
        }
    }
    await agent.send_raw(json.dumps(stray))

    async def killed() -> bool:
        return [s.container_id for s in agent.signals] == ["stray-0"]

    await eventually(killed, timeout=5)
    await submit(m, experiment_yaml(slots=1))

    async def placed() -> bool:
        return len(agent.started) == 1

    await eventually(placed, timeout=5)


async def test_disconnected_agent_gets_no_new_work_and_keeps_its_running_slots(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    await submit(m, experiment_yaml("a", slots=1))

    async def placed() -> bool:
        return len(agent.allocations()) == 1

    await eventually(placed, timeout=5)
    await agent.close()

    async def marked() -> bool:
        (a,) = (await m.get("/api/v1/agents"))["agents"]
        return a["connected"] is False

    await eventually(marked, timeout=5)
    await submit(m, experiment_yaml("b", slots=1))
    # A restarted agent process that finds its container again by its labels.
    back = await add_agent(m, agents, "a1", 1, reconnect=True, reattach="all")
    assert back.shutdown is None
    await asyncio.sleep(1.0)  # two passes: the slot is still held by a's allocation
    assert set(back.started) == set(agent.started)  # reattached; nothing new placed


async def test_container_states_drive_the_allocation_forward_through_the_table(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1, auto_run=False)
    await submit(m, experiment_yaml(slots=1))

    async def placed() -> bool:
        return len(agent.started) == 1

    await eventually(placed, timeout=5)
    (cid,) = agent.started
    alloc = agent.started[cid].spec.allocation_id
    for state in (C.PULLING, C.STARTING, C.RUNNING, C.STARTING, C.PULLING):
        await agent.report(cid, state)  # the last two are late reports: never backwards
    await agent.exit(cid, 0)

    async def ended() -> list[tuple[str | None, str]]:
        rows = [(a, b) for a, b, _ in await history_of(m, alloc)]
        return rows if rows[-1][1] == "TERMINATED" else []

    assert await eventually(ended, timeout=5) == [
        (None, "ASSIGNED"),
        ("ASSIGNED", "PULLING"),
        ("PULLING", "STARTING"),
        ("STARTING", "RUNNING"),
        ("RUNNING", "TERMINATED"),
    ]
