"""Commands end to end on a live master (real HTTP and agent WebSocket), on both databases.

A fake agent stands in for the container side: it reports the container RUNNING and its exit,
and the test ships log lines with the allocation's token, as the harness launcher does.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
from typing import Any

import pytest

from agent.protocol import (
    Container,
    ContainerFailure,
    ContainerState,
    ContainerStateChanged,
    FailureType,
    StartContainer,
    encode,
)
from tests.conftest import PASSWORD
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster, eventually

pytestmark = pytest.mark.slow


async def add_agent(m: LiveMaster, made: list[FakeAgent], agent_id: str, slots: int) -> FakeAgent:
    agent = FakeAgent(m.ws_url, agent_id, slots)
    made.append(agent)
    await agent.connect()
    assert agent.shutdown is None, agent.shutdown
    return agent


async def run_cmd(m: LiveMaster, argv: list[str], expect: int = 200, **extra: Any) -> Any:
    config = {"entrypoint": argv, **extra.pop("config", {})}
    return await m.post("/api/v1/commands", {"config": config, **extra}, expect)


async def command(m: LiveMaster, task_id: str) -> dict[str, Any]:
    return (await m.get(f"/api/v1/commands/{task_id}"))["command"]


async def started(agent: FakeAgent, task_id: str) -> StartContainer:
    async def found() -> StartContainer | None:
        return next((s for s in agent.started.values() if s.spec.task_id == task_id), None)

    return await eventually(found, timeout=15)


async def in_state(m: LiveMaster, task_id: str, state: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        cmd = await command(m, task_id)
        return cmd if cmd["state"] == state else None

    return await eventually(check, timeout=15)


async def running_command(
    m: LiveMaster, agent: FakeAgent, argv: list[str]
) -> tuple[str, StartContainer]:
    """Launch a command; once `agent` started it and the master shows it running, its task id
    and the agent's StartContainer."""
    task_id = (await run_cmd(m, argv))["command"]["id"]
    start = await started(agent, task_id)
    await in_state(m, task_id, "STATE_RUNNING")
    return task_id, start


def token_headers(start: StartContainer) -> dict[str, str]:
    token = start.spec.environment["DET_SESSION_TOKEN"]
    return {"Grpc-Metadata-x-allocation-token": f"Bearer {token}"}


async def ship(m: LiveMaster, start: StartContainer, *lines: str) -> None:
    body = {
        "logs": [
            {
                "taskId": start.spec.task_id,
                "allocationId": start.spec.allocation_id,
                "containerId": start.container.id,
                "log": line,
                "stdtype": "stdout",
                "source": "task",
            }
            for line in lines
        ]
    }
    r = await m.http.post("/api/v1/task/logs", json=body, headers=token_headers(start))
    assert r.status_code == 200, r.text


async def log_lines(m: LiveMaster, task_id: str, follow: bool) -> list[dict[str, Any]]:
    r = await m.http.get(
        f"/api/v1/tasks/{task_id}/logs",
        params={"follow": str(follow).lower()},
        headers=m.admin,
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return [json.loads(line)["result"] for line in r.text.splitlines() if line]


async def test_command_runs_once_ships_logs_and_ends(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "c1", 1)
    reply = await run_cmd(m, ["echo", "hello"])
    cmd = reply["command"]
    task_id = cmd["id"]
    assert cmd["state"] == "STATE_QUEUED" and cmd["username"] == "admin"
    assert cmd["description"].startswith("Command (") and cmd["resourcePool"] == "default"
    assert reply["config"]["resources"]["slots"] == 1
    assert reply["config"]["entrypoint"] == ["echo", "hello"]

    start = await started(agent, task_id)
    assert start.spec.task_type == "COMMAND" and start.spec.slots == 1
    running = await in_state(m, task_id, "STATE_RUNNING")
    assert running["jobId"] == cmd["jobId"]

    tasks = (await m.get("/api/v1/tasks"))["allocationIdToSummary"]
    summary = tasks[start.spec.allocation_id]
    assert summary["taskId"] == task_id and summary["name"] == cmd["description"]
    assert summary["slotsNeeded"] == 1 and summary["resourcePool"] == "default"
    assert summary["schedulerType"] == "priority" and summary["priority"] == 42
    (resources,) = summary["resources"]
    assert resources["containerId"] == start.container.id
    assert resources["agentDevices"] == {
        "c1": {"devices": [{"id": 0, "brand": "fake", "uuid": "c1-0", "type": "TYPE_CPU"}]}
    }
    task = (await m.get(f"/api/v1/tasks/{task_id}"))["task"]
    assert task["taskType"] == "TASK_TYPE_COMMAND" and task["endTime"] is None
    assert [a["state"] for a in task["allocations"]] == ["STATE_RUNNING"]

    await ship(m, start, "hello\n")
    await agent.exit(start.container.id, 0)
    done = await in_state(m, task_id, "STATE_TERMINATED")
    assert done["exitCode"] == 0 and done["exitStatus"] == "command exited successfully"
    assert done["endTime"] is not None
    # Follow ends by itself once the command has ended, after the last line.
    assert [e["log"] for e in await log_lines(m, task_id, follow=True)] == ["hello\n"]
    assert start.spec.allocation_id not in (await m.get("/api/v1/tasks"))["allocationIdToSummary"]
    task = (await m.get(f"/api/v1/tasks/{task_id}"))["task"]
    assert task["endTime"] is not None
    assert task["allocations"][0]["state"] == "STATE_TERMINATED"

    # The slot is free for the next command; the finished one never runs again.
    second = (await run_cmd(m, ["true"]))["command"]["id"]
    await started(agent, second)
    assert [s.spec.task_id for s in agent.started.values()].count(task_id) == 1


async def test_failed_command_is_not_restarted(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "c1", 1)
    task_id, start = await running_command(m, agent, ["sh", "-c", "exit 3"])
    await agent.exit(start.container.id, 3)
    done = await in_state(m, task_id, "STATE_TERMINATED")
    assert done["exitCode"] == 3 and done["exitStatus"] == "command exited with code 3"
    # Later passes (another command placed) do not start it again.
    other = (await run_cmd(m, ["true"]))["command"]["id"]
    await started(agent, other)
    assert [s.spec.task_id for s in agent.started.values()].count(task_id) == 1


async def test_agent_failure_ends_the_command(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "c1", 1)
    task_id, start = await running_command(m, agent, ["sleep", "100"])
    lost = ContainerStateChanged(
        container=Container(id=start.container.id, state=ContainerState.TERMINATED),
        allocation_id=start.spec.allocation_id,
        failure=ContainerFailure(type=FailureType.AGENT_FAILED, message="lost"),
    )
    await agent.send_raw(encode(lost))
    done = await in_state(m, task_id, "STATE_TERMINATED")
    assert done["exitCode"] is None and FailureType.AGENT_FAILED.value in done["exitStatus"]


async def test_lost_agent_ends_the_command_for_good(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    """An agent gone past the pool's reconnect wait: the command ends (AGENT_FAILED) and is
    not placed again on the agent that comes next (a trial would be re-queued)."""
    m = await start_master(
        agent_heartbeat_interval_s=0.2,
        agent_liveness_timeout_s=1.0,
        resource_pools=[{"pool_name": "default", "agent_reconnect_wait": 1}],
    )
    agent = await add_agent(m, agents, "c1", 1)
    task_id, _ = await running_command(m, agent, ["sleep", "100"])
    await agent.close()
    done = await in_state(m, task_id, "STATE_TERMINATED")
    assert done["exitStatus"] == f"failed: {FailureType.AGENT_FAILED.value}"
    other = await add_agent(m, agents, "c2", 1)
    later = (await run_cmd(m, ["true"]))["command"]["id"]
    await started(other, later)
    assert task_id not in {s.spec.task_id for s in other.started.values()}


async def test_disabling_its_agent_kills_the_command(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "c1", 1)
    task_id, start = await running_command(m, agent, ["sleep", "100"])
    await m.post("/api/v1/agents/c1/disable")
    done = await in_state(m, task_id, "STATE_TERMINATED")
    assert done["exitStatus"] == "killed by the master" and done["exitCode"] == 137
    assert [s.container_id for s in agent.signals] == [start.container.id]


async def test_kill_queued_and_running(start_master: StartMaster, agents: list[FakeAgent]) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "c1", 1)
    running_id = (await run_cmd(m, ["sleep", "100"]))["command"]["id"]
    queued_id = (await run_cmd(m, ["sleep", "100"]))["command"]["id"]
    start = await started(agent, running_id)
    await in_state(m, running_id, "STATE_RUNNING")
    assert (await command(m, queued_id))["state"] == "STATE_QUEUED"

    killed = (await m.post(f"/api/v1/commands/{queued_id}/kill"))["command"]
    assert killed["state"] == "STATE_TERMINATED"
    assert killed["exitStatus"] == "killed before it started" and killed["endTime"]
    task = (await m.get(f"/api/v1/tasks/{queued_id}"))["task"]
    assert task["allocations"] == [] and task["endTime"] is not None

    killing = (await m.post(f"/api/v1/commands/{running_id}/kill"))["command"]
    assert killing["state"] == "STATE_TERMINATING"
    # The pool loop sends SIGKILL; the fake agent then reports exit 137.
    done = await in_state(m, running_id, "STATE_TERMINATED")
    assert [s.container_id for s in agent.signals] == [start.container.id]
    assert agent.signals[0].signal == "SIGKILL"
    assert done["exitStatus"] == "killed by user request" and done["exitCode"] == 137
    # Killing again is harmless.
    again = (await m.post(f"/api/v1/commands/{running_id}/kill"))["command"]
    assert again["state"] == "STATE_TERMINATED"
    assert queued_id not in {s.spec.task_id for s in agent.started.values()}


async def test_others_may_not_kill(start_master: StartMaster) -> None:
    m = await start_master()
    task_id = (await run_cmd(m, ["true"]))["command"]["id"]
    user = await m.login("determined", PASSWORD)
    r = await m.http.post(f"/api/v1/commands/{task_id}/kill", headers=user)
    assert r.status_code == 403, r.text
    assert "only the owner" in r.json()["message"]
    r = await m.http.post("/api/v1/commands/no-such-id/kill", headers=m.admin)
    assert r.status_code == 404


async def test_list_filters_and_pages(start_master: StartMaster) -> None:
    m = await start_master()
    ids = [(await run_cmd(m, ["true"]))["command"]["id"] for _ in range(3)]
    listed = await m.get("/api/v1/commands")
    assert [c["id"] for c in listed["commands"]] == ids
    assert listed["pagination"]["total"] == 3
    mine = await m.get("/api/v1/commands", params={"users": "admin"})
    assert len(mine["commands"]) == 3
    assert (await m.get("/api/v1/commands", params={"users": "determined"}))["commands"] == []
    by_id = await m.get("/api/v1/commands", params={"userIds": 1})
    assert len(by_id["commands"]) == 3
    page = await m.get("/api/v1/commands", params={"offset": 1, "limit": 1})
    assert [c["id"] for c in page["commands"]] == ids[1:2]
    assert page["pagination"]["total"] == 3
    assert len((await m.get("/api/v1/commands", params={"workspaceId": 1}))["commands"]) == 3
    assert (await m.get("/api/v1/commands", params={"workspaceId": 99}))["commands"] == []

    # Each is a job in the queue, typed as a command.
    async def queued() -> list[dict[str, Any]]:
        jobs = [j["full"] for j in (await m.get("/api/v1/job-queues-v2"))["jobs"]]
        return [j for j in jobs if j["entityId"] in ids]

    jobs = await eventually(queued, timeout=10)
    assert {j["type"] for j in jobs} == {"TYPE_COMMAND"}
    assert {j["jobId"] for j in jobs} == {c["jobId"] for c in listed["commands"]}


@pytest.mark.parametrize(
    ("body", "status", "fragments"),
    [
        ({"config": {}}, 400, ["entrypoint", "Field required"]),
        ({"config": {"entrypoint": []}}, 400, ["entrypoint", "program"]),
        ({"config": {"entrypoint": ["x"], "bogus": 1}}, 400, ["bogus", "unknown key"]),
        (
            {"config": {"entrypoint": ["x"], "resources": {"slots": "two"}}},
            400,
            ["resources.slots"],
        ),
        (
            {"config": {"entrypoint": ["x"], "resources": {"resource_pool": "gpu"}}},
            400,
            ["resource pool 'gpu' does not exist"],
        ),
        (
            {"config": {"entrypoint": ["x"], "resources": {"slots": 5}}},
            400,
            ["exceeds cluster capacity", "5 slots"],
        ),
        ({"config": {"entrypoint": ["x"]}, "template_name": "nope"}, 404, ["template 'nope'"]),
        ({"config": {"entrypoint": ["x"]}, "workspaceId": 77}, 404, ["workspace 77"]),
        (
            {"config": {"entrypoint": ["x"]}, "files": [{"path": "../x", "type": 48}]},
            400,
            ["invalid context directory", "../x"],
        ),
        ({"config": 5}, 400, []),
    ],
)
async def test_bad_launches_are_refused_clearly(
    start_master: StartMaster,
    agents: list[FakeAgent],
    body: dict[str, Any],
    status: int,
    fragments: list[str],
) -> None:
    m = await start_master()
    await add_agent(m, agents, "c1", 1)
    r = await m.http.post("/api/v1/commands", json=body, headers=m.admin)
    assert r.status_code == status, r.text
    message = r.json()["message"]
    for fragment in fragments:
        assert fragment in message, message
    assert (await m.get("/api/v1/commands"))["commands"] == []


def _legacy_file(path: str, content: bytes | None) -> dict[str, Any]:
    return {
        "path": path,
        "type": 53 if content is None else 48,
        "content": "" if content is None else base64.b64encode(content).decode(),
        "mtime": 1_700_000_000,
        "mode": 0o40755 if content is None else 0o100644,
        "uid": 0,
        "gid": 0,
    }


async def test_context_directory_and_launch_spec(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "c1", 2)
    files = [_legacy_file("sub", None), _legacy_file("sub/data.txt", b"42\n")]
    config = {
        "description": "with files",
        "environment": {"image": "img:1", "environment_variables": ["A=1", "B=x=y"]},
        "resources": {"slots": 2, "priority": 7, "shm_size": "1G"},
        "bind_mounts": [{"host_path": "/tmp", "container_path": "/data", "read_only": True}],
    }
    reply = await run_cmd(m, ["cat", "sub/data.txt"], files=files, config=config)
    task_id = reply["command"]["id"]
    assert reply["command"]["description"] == "with files"
    assert reply["config"]["environment"]["image"] == {
        "cpu": "img:1",
        "cuda": "img:1",
        "rocm": "img:1",
    }
    start = await started(agent, task_id)

    r = await m.http.get(f"/api/v1/tasks/{task_id}/context_directory", headers=token_headers(start))
    assert r.status_code == 200, r.text
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(r.json()["b64Tgz"]))) as archive:
        assert archive.extractfile("sub/data.txt").read() == b"42\n"  # type: ignore[union-attr]

    summary = (await m.get("/api/v1/tasks"))["allocationIdToSummary"][start.spec.allocation_id]
    assert summary["priority"] == 7 and summary["slotsNeeded"] == 2

    from controlplane.services.commands import command_launch_spec

    async with m.app.state["api"].sessionmaker() as session:
        spec = await command_launch_spec(session, task_id)
    assert spec.image == "img:1" and spec.argv == ("cat", "sub/data.txt")
    assert spec.environment == {"A": "1", "B": "x=y"}
    assert [(x.host_path, x.container_path, x.read_only) for x in spec.mounts] == [
        ("/tmp", "/data", True)
    ]
    assert spec.shm_size_bytes == 1 << 30


async def test_no_context_gives_an_empty_archive(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "c1", 1)
    task_id = (await run_cmd(m, ["true"]))["command"]["id"]
    start = await started(agent, task_id)
    r = await m.http.get(f"/api/v1/tasks/{task_id}/context_directory", headers=token_headers(start))
    assert r.status_code == 200 and r.json()["b64Tgz"] == ""
    # ... and the launcher is told so, sparing every plain command that round trip.
    assert start.spec.environment["RESOLUTE_NO_CONTEXT"] == "1"


async def test_a_single_argument_runs_through_the_shell(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    """`det cmd run 'for x in a b; do echo $x; done'` sends a one-element list: the container
    runs it with `sh -c`, as Determined's command-entrypoint.sh does; several arguments run as
    given."""
    m = await start_master()
    agent = await add_agent(m, agents, "c1", 1)
    loop = "for x in a b; do echo $x; done"
    shell_id = (await run_cmd(m, [loop]))["command"]["id"]
    start = await started(agent, shell_id)
    assert start.spec.argv == ("/bin/sh", "-c", loop)
    await agent.exit(start.container.id, 0)  # frees the one slot
    exec_id = (await run_cmd(m, ["echo", "a b"]))["command"]["id"]
    assert (await started(agent, exec_id)).spec.argv == ("echo", "a b")


TRIAL_CONFIG = (
    "name: t\nentrypoint: python3 train.py\n"
    "searcher: {name: single, metric: loss, max_length: 10}\n"
    "hyperparameters: {lr: 0.1}\nresources: {slots_per_trial: 1}\n"
)


async def test_task_views_show_trials_too(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    await add_agent(m, agents, "c1", 2)
    exp = await m.post(
        "/api/v1/experiments", {"config": TRIAL_CONFIG, "modelDefinition": [], "activate": True}
    )
    exp_id = exp["experiment"]["id"]
    cmd_id = (await run_cmd(m, ["true"]))["command"]["id"]

    async def both() -> dict[str, Any]:
        summaries = (await m.get("/api/v1/tasks"))["allocationIdToSummary"]
        return summaries if len(summaries) == 2 else {}

    summaries = await eventually(both, timeout=15)
    by_type = {s["taskType"]: s for s in summaries.values()}
    trial = by_type["TASK_TYPE_TRIAL"]
    (trial_row,) = (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"]
    assert trial["name"] == f"Trial {trial_row['id']} (Experiment {exp_id})"
    assert by_type["TASK_TYPE_COMMAND"]["taskId"] == cmd_id
    task = (await m.get(f"/api/v1/tasks/{trial['taskId']}"))["task"]
    assert task["taskType"] == "TASK_TYPE_TRIAL"
    assert [a["allocationId"] for a in task["allocations"]] == [trial["allocationId"]]
    r = await m.http.get("/api/v1/tasks/no-such-task", headers=m.admin)
    assert r.status_code == 404
