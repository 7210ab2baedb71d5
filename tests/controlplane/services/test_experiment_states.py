"""An ACTIVE experiment shows QUEUED, PULLING, STARTING, RUNNING by its allocations, as
Determined's enrichExperimentState; the real 0.38.1 client's wait for RUNNING returns.

What users saw before: an experiment stayed STATE_ACTIVE from submission to its end, and the
e2e helper `wait_for_experiment_state(sess, id, experimentv1State.RUNNING)` waited forever.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agent.protocol import ContainerState
from tests.compat.conftest import det_venv
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    experiment_yaml,
    placed_container,
    submit,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually

# Determined's e2e helper (e2e_tests/tests/experiment/experiment.py) polls GetExperiment through
# the generated bindings until the state is the target; the SDK's Experiment.state reads it too.
WAIT_FOR_STATE = r"""
import sys, time
from determined.common.api import bindings
from determined.experimental import client

master, password, exp_id, target = sys.argv[1:]
client.login(master=master, user="admin", password=password)
sess = client._determined._session
want = bindings.experimentv1State(target)
seen = []
for _ in range(1200):
    state = bindings.get_GetExperiment(sess, experimentId=int(exp_id)).experiment.state
    if not seen or seen[-1] != state.value:
        seen.append(state.value)
        print("SEEN", state.value, flush=True)
    if state == want:
        break
    time.sleep(0.05)
else:
    sys.exit(f"never reached {target}: saw {seen}")
print("SDK", client.get_experiment(int(exp_id)).state.value, flush=True)
"""


async def _state(m: LiveMaster, exp_id: int) -> str:
    return str((await m.get(f"/api/v1/experiments/{exp_id}"))["experiment"]["state"])


async def _shows(m: LiveMaster, exp_id: int, state: str) -> None:
    async def shown() -> bool:
        return await _state(m, exp_id) == state

    await eventually(shown, timeout=10)


async def _listed_states(m: LiveMaster, exp_id: int, **params: str) -> list[str]:
    rows = (await m.get("/api/v1/experiments", params=params))["experiments"]
    return [r["state"] for r in rows if r["id"] == exp_id]


async def test_an_active_experiment_shows_what_its_allocation_does(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    created = await submit(m, experiment_yaml("states"))
    exp_id = created["experiment"]["id"]
    assert created["experiment"]["state"] == "STATE_QUEUED"  # no agent: nothing placed
    assert await _state(m, exp_id) == "STATE_QUEUED"
    agent = await add_agent(m, agents, "a1", 1, auto_run=False)
    container = await placed_container(agent)
    assert await _state(m, exp_id) == "STATE_QUEUED"  # placed, not yet pulling
    for reported, shown in [
        (ContainerState.PULLING, "STATE_PULLING"),
        (ContainerState.STARTING, "STATE_STARTING"),
        (ContainerState.RUNNING, "STATE_RUNNING"),
    ]:
        await agent.report(container, reported)
        await _shows(m, exp_id, shown)
    # Every view of the experiment shows it, and a filter on a derived state finds it.
    assert await _listed_states(m, exp_id) == ["STATE_RUNNING"]
    assert await _listed_states(m, exp_id, states="STATE_RUNNING") == ["STATE_RUNNING"]
    r = await m.http.post(
        "/api/v1/experiments-search", json={"limit": 100}, headers=m.admin
    )  # the web UI's list
    assert r.status_code == 200, r.text
    found = [e["experiment"]["state"] for e in r.json()["experiments"]]
    assert found == ["STATE_RUNNING"]
    # A state of its own (not ACTIVE) is shown as stored, whatever the allocations do.
    await m.post(f"/api/v1/experiments/{exp_id}/pause")
    assert await _state(m, exp_id) == "STATE_PAUSED"


@pytest.mark.compat
async def test_the_real_clients_wait_for_running_returns(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    venv = det_venv()
    if venv is None:
        pytest.skip("the real determined 0.38.1 client (.venv-det) is not installed")
    m = await start_master()
    exp_id = (await submit(m, experiment_yaml("wait")))["experiment"]["id"]
    agent = await add_agent(m, agents, "a1", 1, auto_run=False)
    container = await placed_container(agent)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
        "DET_DEBUG_CONFIG_PATH": str(tmp_path / "detcfg"),
    }
    waiter = await asyncio.create_subprocess_exec(
        str(venv / "bin" / "python"), "-c", WAIT_FOR_STATE,
        m.url, PASSWORD, str(exp_id), "STATE_RUNNING",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env,
    )  # fmt: skip
    assert waiter.stdout is not None
    first = await asyncio.wait_for(waiter.stdout.readline(), 60)
    assert first.decode().strip() == "SEEN STATE_QUEUED", first  # it waits, it has not returned
    for state in (ContainerState.PULLING, ContainerState.STARTING, ContainerState.RUNNING):
        await agent.report(container, state)
    rest, _ = await asyncio.wait_for(waiter.communicate(), 60)
    out = first.decode() + rest.decode()
    assert waiter.returncode == 0, out
    assert out.splitlines()[-2:] == ["SEEN STATE_RUNNING", "SDK STATE_RUNNING"], out
