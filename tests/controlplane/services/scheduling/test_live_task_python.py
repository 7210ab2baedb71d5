"""The master's part in choosing a task's Python: ``environment.python`` of an experiment or a
command goes into each container's TaskSpec, and each agent hears its pool's default
(``task_container_defaults.python``, the pool's own block over the top level) in its options.
The agent decides between them (tests/agent/test_daemon_task_python.py)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.services.scheduling.apply import DeviceSpecific
from controlplane.services.trial_launch import TrialLaunchInputs, build_trial_launch
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    experiment_yaml,
    submit,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually

pytestmark = pytest.mark.slow

POOLS = [
    {"pool_name": "default"},
    {"pool_name": "gpu", "task_container_defaults": {"python": "/opt/gpu-venv"}},
]


def test_a_trials_python_survives_the_choice_of_device() -> None:
    config: dict[str, Any] = {
        "entrypoint": "python3 train.py",
        "environment": {"image": "img", "python": "/opt/venvs/torch"},
    }
    inputs = TrialLaunchInputs(
        task_id="t", trial_id=1, experiment_id=1, config=config, hparams={}, seed=1, run_id=1,
        username="u",
    )  # fmt: skip
    spec = build_trial_launch(inputs)
    assert spec.python == "/opt/venvs/torch"
    assert isinstance(spec, DeviceSpecific)
    assert spec.for_device("cpu").python == "/opt/venvs/torch"
    config["environment"].pop("python")
    assert build_trial_launch(inputs).python == ""


async def test_pools_send_their_python_and_tasks_carry_their_own(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(task_container_defaults={"python": "/opt/venv"}, resource_pools=POOLS)
    plain = await add_agent(m, agents, "a-default", 1)
    gpu = await add_agent(m, agents, "a-gpu", 1, pool="gpu")
    assert plain.options is not None and plain.options.task_python == "/opt/venv"
    assert gpu.options is not None and gpu.options.task_python == "/opt/gpu-venv"

    own = experiment_yaml(name="own") + "environment:\n  python: /opt/venvs/mine\n"
    await submit(m, own)

    async def placed() -> bool:
        return len(plain.started) == 1

    await eventually(placed, timeout=10)
    (start,) = plain.started.values()
    assert start.spec.python == "/opt/venvs/mine"

    await submit(m, experiment_yaml(name="theirs", pool="gpu"))

    async def placed_on_gpu() -> bool:
        return len(gpu.started) == 1

    await eventually(placed_on_gpu, timeout=10)
    (start,) = gpu.started.values()
    assert start.spec.python == ""  # left to the pool's default, which the agent knows


async def test_a_commands_python_reaches_its_container(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    assert agent.options is not None and agent.options.task_python == ""
    config = {
        "entrypoint": ["python3", "-V"],
        "resources": {"slots": 1},
        "environment": {"python": "python3.12"},
    }
    await m.post("/api/v1/commands", {"config": config})

    async def placed() -> bool:
        return len(agent.started) == 1

    await eventually(placed, timeout=10)
    (start,) = agent.started.values()
    assert start.spec.python == "python3.12"


async def test_a_command_with_a_bad_python_is_refused_at_its_key(start_master: StartMaster) -> None:
    m = await start_master()
    config = {"entrypoint": ["true"], "environment": {"python": 3}}
    r = await m.http.post("/api/v1/commands", headers=m.admin, json={"config": config})
    assert r.status_code == 400, r.text
    assert "environment.python" in r.text and "must be a string" in r.text
