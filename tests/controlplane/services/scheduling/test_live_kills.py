"""Kills the master decides on: disabling an agent without drain, a preemption past its
timeout, a graceful stop of work that is not running yet, a single trial's kill; and the
cooldown between repeated SIGKILLs (reference §3.3, §4.8, §7.3)."""

from __future__ import annotations

import asyncio
import json

from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    allocations_on,
    experiment_yaml,
    history_of,
    placed_container,
    run_one_trial,
    submit,
    trial_of,
    trial_reaches,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually


def _config(name: str, preemption_timeout: int | None = None) -> str:
    text = experiment_yaml(name)
    if preemption_timeout is not None:
        text += f"preemption_timeout: {preemption_timeout}\n"
    return text


async def test_disable_without_drain_kills_and_the_trial_moves_without_a_restart(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    a1 = await add_agent(m, agents, "a1", 1)
    exp, first = await run_one_trial(m, a1)
    a2 = await add_agent(m, agents, "a2", 1)
    await m.post("/api/v1/agents/a1/disable")
    await allocations_on(a2)
    assert [s.container_id for s in a1.signals] == [f"{first}-0"]
    trial = await trial_of(m, exp["id"])
    assert trial["state"] == "STATE_ACTIVE" and trial["restarts"] == 0
    assert "killed by the master" in (await history_of(m, first))[-1][2]


async def test_disable_with_drain_lets_the_work_finish(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    a1 = await add_agent(m, agents, "a1", 1)
    exp, alloc = await run_one_trial(m, a1)
    await m.post("/api/v1/agents/a1/disable", {"drain": True})
    await asyncio.sleep(1.0)  # two passes
    assert a1.signals == [] and a1.allocations() == {alloc}
    await a1.exit(f"{alloc}-0", 0)
    await trial_reaches(m, exp["id"], "STATE_COMPLETED")


async def test_a_preemption_past_its_timeout_is_killed(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    exp, alloc = await run_one_trial(m, agent, _config("e", preemption_timeout=1))
    await m.post(f"/api/v1/experiments/{exp['id']}/pause")
    await asyncio.sleep(0.5)
    assert agent.signals == []  # still within preemption_timeout: the harness may finish

    async def killed() -> bool:
        return bool(agent.signals)

    await eventually(killed, timeout=5)
    assert [s.signal for s in agent.signals] == ["SIGKILL"]

    async def paused() -> bool:
        t = await trial_of(m, exp["id"])
        return t["state"] == "STATE_PAUSED" and not agent.allocations()

    await eventually(paused, timeout=5)
    assert (await trial_of(m, exp["id"]))["restarts"] == 0
    assert "preemption_timeout (1s)" in " ".join(row[2] for row in await history_of(m, alloc))


async def test_a_graceful_stop_of_work_not_yet_running_kills_it_at_once(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1, auto_run=False)
    exp = (await submit(m, experiment_yaml("e")))["experiment"]
    cid = await placed_container(agent)
    await m.post(f"/api/v1/experiments/{exp['id']}/pause")

    async def killed() -> bool:
        return [s.container_id for s in agent.signals] == [cid]

    await eventually(killed, timeout=5)
    alloc = agent.started[cid].spec.allocation_id
    # Killed, not preempted: there is no harness yet to ask.
    r = await m.http.get(f"/api/v1/allocations/{alloc}/signals/preemption", headers=m.admin)
    assert r.json() == {"preempt": False}
    assert "before it was running" in " ".join(row[2] for row in await history_of(m, alloc))
    await trial_reaches(m, exp["id"], "STATE_PAUSED")


async def test_kills_are_repeated_after_the_cooldown_until_the_container_ends(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    m.scheduling.kill_cooldown = m.scheduling.kill_cooldown / 15  # 1 s instead of 15 s
    agent = await add_agent(m, agents, "a1", 1, ignore_kill=True)
    exp, alloc = await run_one_trial(m, agent)
    await m.post(f"/api/v1/experiments/{exp['id']}/kill")

    async def twice() -> bool:
        return len(agent.signals) >= 2

    await eventually(twice, timeout=5)
    assert len(agent.signals) == 2  # not once per 0.5 s pass
    await agent.exit(f"{alloc}-0", 137)
    await trial_reaches(m, exp["id"], "STATE_CANCELED")
    count = len(agent.signals)
    await asyncio.sleep(1.5)
    assert len(agent.signals) == count


async def test_killing_a_trial(start_master: StartMaster, agents: list[FakeAgent]) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    exp, alloc = await run_one_trial(m, agent, experiment_yaml("e", trials=2))
    trials = (await m.get(f"/api/v1/experiments/{exp['id']}/trials"))["trials"]
    (target,) = [t for t in trials if alloc.startswith(f"{t['taskId']}.")]
    (waiting,) = [t for t in trials if t["id"] != target["id"]]

    r = await m.http.post("/api/v1/trials/999999/kill", headers=m.admin)
    assert r.status_code == 404
    user = await m.login("determined", "Test-Passw0rd!")
    r = await m.http.post(f"/api/v1/trials/{target['id']}/kill", headers=user)
    assert r.status_code == 403

    await m.post(f"/api/v1/trials/{target['id']}/kill")

    async def canceled() -> bool:
        t = (await m.get(f"/api/v1/trials/{target['id']}"))["trial"]
        return t["state"] == "STATE_CANCELED"

    await eventually(canceled, timeout=5)
    assert [s.container_id for s in agent.signals] == [f"{alloc}-0"]
    # The other trial gets the slot; the experiment goes on.
    e = (await m.get(f"/api/v1/experiments/{exp['id']}"))["experiment"]
    assert e["state"] in ("STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING")

    async def other_runs() -> bool:
        return any(a.startswith(f"{waiting['taskId']}.") for a in agent.allocations())

    await eventually(other_runs, timeout=5)
    # Queued trials are killed at once; again is a no-op; the experiment then ends: CANCELED, as
    # Determined's searcher shuts down cancelled when every trial was killed by its user.
    await m.post(f"/api/v1/trials/{target['id']}/kill")
    await m.post(f"/api/v1/trials/{waiting['id']}/kill")

    async def ended() -> bool:
        e = (await m.get(f"/api/v1/experiments/{exp['id']}"))["experiment"]
        return e["state"] == "STATE_CANCELED"

    await eventually(ended, timeout=5)


async def test_agent_log_lines_are_task_logs(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1, auto_run=False)
    exp = (await submit(m, experiment_yaml("e")))["experiment"]
    cid = await placed_container(agent)
    await agent.log(cid, "pulling image busybox:nope")
    await agent.log(cid, "image busybox:nope not found", level="ERROR")
    await agent.log("someone-else-0", "not ours")
    trial = await trial_of(m, exp["id"])

    async def shown() -> list[dict[str, str]]:
        r = await m.http.get(f"/api/v1/trials/{trial['id']}/logs", headers=m.admin)
        lines = [json.loads(x)["result"] for x in r.text.splitlines() if x]
        return lines if len(lines) == 2 else []

    first, second = await eventually(shown, timeout=5)
    assert first["message"] == "pulling image busybox:nope\n"
    assert second["message"] == "image busybox:nope not found\n"
    assert second["level"] == "LOG_LEVEL_ERROR"
    r = await m.http.get(
        f"/api/v1/trials/{trial['id']}/logs",
        params={"sources": "agent", "agentIds": "a1", "containerIds": cid},
        headers=m.admin,
    )
    assert len([x for x in r.text.splitlines() if x]) == 2


async def test_a_direct_tasks_output_lines_are_task_logs(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    """ContainerOutput: stored as the task's own lines (source task), Determined's rank and
    level prefixes read off, each batch confirmed; a stranger's batch confirmed and dropped."""
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1, auto_run=False)
    exp = (await submit(m, experiment_yaml("e")))["experiment"]
    cid = await placed_container(agent)
    await agent.output(cid, 1, [("stdout", "plain"), ("stderr", "[rank=2] WARNING: careful")])
    await agent.output(cid, 2, [("stdout", "ERROR: bad\x00byte"), ("stdout", "[rank=x] as is")])
    await agent.output("someone-else-0", 1, [("stdout", "not ours")])
    trial = await trial_of(m, exp["id"])

    async def confirmed() -> bool:
        return len(agent.stored) == 3

    await eventually(confirmed, timeout=5)
    assert [(s.container_id, s.seq) for s in agent.stored] == [
        (cid, 1),
        (cid, 2),
        ("someone-else-0", 1),
    ]
    r = await m.http.get(f"/api/v1/trials/{trial['id']}/logs", headers=m.admin)
    lines = [json.loads(x)["result"] for x in r.text.splitlines() if x]
    got = [(x["message"], x["level"], x["stdtype"], x["source"], x["rankId"]) for x in lines]
    assert got == [
        ("plain\n", "LOG_LEVEL_INFO", "stdout", "task", 0),
        ("careful\n", "LOG_LEVEL_WARNING", "stderr", "task", 2),
        ("bad\ufffdbyte\n", "LOG_LEVEL_ERROR", "stdout", "task", 0),
        ("[rank=x] as is\n", "LOG_LEVEL_INFO", "stdout", "task", 0),
    ]
