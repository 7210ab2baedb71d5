"""The rendered start-up script, run for real by the instance runner against a live master.

For each cloud: an instance shows as running → its script runs in a sandbox with a fake metadata
server → a real `det-agent` (this repository's) registers under the instance id (AWS) or the
instance name (GCP), in the pool, with the slot type the script was rendered for → a spot notice
on the metadata server → the master shows the agent draining → the instance is terminated → the
runner kills its processes and the master sees the agent go.

Each agent is a separate Python process that starts in a second or two; the file takes ~7 s.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent.runtimes import supervise
from provisioners.agent_setup import AgentSetup, render_setup_script
from tests.support.instance_runner import InstanceRunner, kill_tasks
from tests.support.live_master import LiveMaster, eventually, master_starter

POOL = "spot-pool"
POOLS = [{"pool_name": "default"}, {"pool_name": POOL}]


@pytest.fixture
async def master(tmp_path: Path) -> AsyncIterator[LiveMaster]:
    async with master_starter(f"sqlite+aiosqlite:///{tmp_path / 'master.db'}", tmp_path) as start:
        yield await start(resource_pools=POOLS)


class FakeCloud:
    """The cloud view the runner reads: instance id → (agent name, state, start-up script)."""

    def __init__(self) -> None:
        self.instances: dict[str, tuple[str, str, str]] = {}

    def __call__(self) -> list[tuple[str, str, str, str]]:
        return [(iid, name, state, script) for iid, (name, state, script) in self.instances.items()]

    def set_state(self, instance_id: str, state: str) -> None:
        name, _, script = self.instances[instance_id]
        self.instances[instance_id] = (name, state, script)


async def agent_view(m: LiveMaster, agent_id: str) -> dict[str, Any] | None:
    r = await m.http.get(f"/api/v1/agents/{agent_id}", headers=m.admin)
    return r.json()["agent"] if r.status_code == 200 else None


@pytest.mark.parametrize(
    ("cloud", "instance_id", "agent_name", "running", "slot_type", "slots"),
    [
        ("aws", "i-0a1b2c3d4e5f60718", "i-0a1b2c3d4e5f60718", "running", "cpu", ["TYPE_CPU"]),
        ("gcp", "8113375629170216457", "spot-pool-brave-otter-00001", "RUNNING", "none", []),
    ],
)
async def test_the_script_starts_an_agent_that_registers_and_drains_on_notice(
    master: LiveMaster,
    tmp_path: Path,
    cloud: str,
    instance_id: str,
    agent_name: str,
    running: str,
    slot_type: str,
    slots: list[str],
) -> None:
    script = render_setup_script(
        AgentSetup(
            cloud=cloud,  # type: ignore[arg-type]
            master_url=master.url,
            resource_pool=POOL,
            slot_type=slot_type,  # type: ignore[arg-type]
            agent_reconnect_attempts=2,
            agent_reconnect_backoff=0.5,
            startup_script="#!/bin/sh\necho pool start-up script ran\n",
            # The install command is the runner's (a link to this repo's det-agent).
            agent_install_command="false",
        )
    )
    cloud_view = FakeCloud()
    runner = InstanceRunner(
        cloud_view,
        tmp_path / "vms",
        slots=None,  # the devices the rendered slot type detects
        agent_args=("--interruption-poll-interval", "0.1"),
    )
    with runner:
        cloud_view.instances[instance_id] = (agent_name, "pending", script)
        await asyncio.sleep(2 * runner.interval_s)
        assert runner.running_ids() == set(), "only a running instance boots"
        cloud_view.set_state(instance_id, running)
        vm = await eventually(lambda: _booted(runner, instance_id), timeout=5)

        async def registered() -> dict[str, Any] | None:
            assert vm.process.poll() is None, vm.log()
            return await agent_view(master, agent_name)

        view = await eventually(registered, timeout=30)
        assert view["resourcePools"] == [POOL]
        assert sorted(s["device"]["type"] for s in view["slots"].values()) == slots
        assert view["enabled"] is True and view["draining"] is False
        assert "pool start-up script ran" in vm.log()

        runner.notice(instance_id)

        async def draining() -> bool:
            view = await agent_view(master, agent_name)
            return bool(view and view["draining"] and not view["enabled"])

        await eventually(draining, timeout=10)

        cloud_view.set_state(instance_id, "terminated")

        async def gone() -> bool:
            view = await agent_view(master, agent_name)
            return bool(view and view["connected"] is False)

        await eventually(gone, timeout=10)
        assert vm.ended and vm.process.poll() is not None


async def _booted(runner: InstanceRunner, instance_id: str) -> Any:
    return runner.machines.get(instance_id)


def test_a_dying_vm_takes_the_agents_task_processes_with_it(tmp_path: Path) -> None:
    """The process runtime starts tasks in sessions of their own; the runner ends them too."""
    task = subprocess.Popen(["sleep", "60"], start_new_session=True)
    supervisor = subprocess.Popen(["sleep", "60"], start_new_session=True)
    folder = tmp_path / "work" / "process" / "t1.1-0"
    folder.mkdir(parents=True)
    pids = {
        "supervisor_pid": supervisor.pid,
        "supervisor_start": supervise.process_start_time(supervisor.pid),
        "child_pid": task.pid,
        "child_start": supervise.process_start_time(task.pid),
        "child_pgid": task.pid,
    }
    (folder / supervise.PIDS_FILE).write_text(json.dumps(pids))
    kill_tasks(tmp_path / "work" / "process")
    assert task.wait(5) == -signal.SIGKILL
    assert supervisor.wait(5) == -signal.SIGKILL
