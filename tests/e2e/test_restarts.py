"""What counts against `max_restarts` on a real `det deploy local` deployment (process runtime):
a trial killed together with its agent is the platform's loss, its own crash is not.

Slow: each test starts a master and an agent as processes and runs a real trial.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from cli.deploy import local
from tests.e2e.conftest import WORKLOAD, Deploy, Deployment, steps_config, wait_for

pytestmark = pytest.mark.slow

AGENT = "local-agent-0"

# Waits for `gate` (a file) to appear, then exits 1: the trial's own failure, timed by the test.
GATED_CRASH = """
import os, sys, time
import harness as det

gate = det.get_cluster_info().trial.hparams["gate"]
print("waiting for the gate", flush=True)
while not os.path.exists(gate):
    time.sleep(0.05)
print("crashing now", flush=True)
sys.exit(1)
"""


def task_folders(d: Deployment) -> list[Path]:
    """The process runtime's folders of the agent's tasks (pids.json, exit.json)."""
    return sorted(p.parent for p in (d.data_dir / local.AGENTS_DIR / AGENT).glob("**/pids.json"))


def kill_agent_and_its_tasks(d: Deployment) -> list[Path]:
    """kill -9 the agent and its trial's process at once, as a dying machine or the OOM killer
    taking both would; the task's folders (where its supervisor records the SIGKILL)."""
    folders = [f for f in task_folders(d) if not (f / "exit.json").exists()]
    assert folders, "the agent runs no task"
    children = [json.loads((f / "pids.json").read_text())["child_pid"] for f in folders]
    agent = d.process(AGENT)
    os.kill(agent.pid, signal.SIGKILL)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not local.alive(agent), 10, "the agent to die")
    return folders


def restart_agent(d: Deployment) -> None:
    """Start the agent again with the same id and command line, as its service manager would."""
    state = d.state()
    launch = local.agent_launch(
        d.options,
        0,
        state.runtime,
        sys.executable,
        state.task_python,
        single_user=bool(state.single_user_because),
    )
    record = local.spawn(launch)
    state.processes = [p for p in state.processes if p.name != AGENT] + [record]
    local.write_state(state)


def test_a_trial_killed_with_its_agent_resumes_without_a_restart(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    exp_id = d.create_experiment(steps_config(24, 0.25, 5, max_restarts=0), WORKLOAD, tmp_path)
    trial_id = d.trial_of(exp_id)["id"]
    d.wait_steps(trial_id, 7, timeout=120)

    folders = kill_agent_and_its_tasks(d)
    wait_for(lambda: all((f / "exit.json").exists() for f in folders), 10, "the task's end")
    codes = [json.loads((f / "exit.json").read_text())["exit_code"] for f in folders]
    assert codes == [137], codes
    restart_agent(d)

    done = d.wait_trial_state(trial_id, {"STATE_COMPLETED"}, timeout=240)
    assert done["restarts"] == 0  # max_restarts 0, and yet it resumed: not the trial's fault
    logs = d.trial_logs(trial_id)
    starts = [line for line in logs if "started at step" in line]
    assert len(starts) == 2 and starts[0] == "started at step 0 (run 1)", starts
    resumed_at = int(re.search(r"started at step (\d+)", starts[1]).group(1))
    assert resumed_at >= 5 and resumed_at % 5 == 0, starts  # from its latest checkpoint
    assert "done" in logs
    assert d.training_steps(trial_id) == list(range(1, 25))


def test_a_trial_that_exits_1_while_its_agent_is_down_still_counts(
    deploy: Deploy, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    context.mkdir()
    (context / "gated_crash.py").write_text(GATED_CRASH)
    gate = tmp_path / "gate"
    config = {
        "name": "e2e-gated-crash",
        "entrypoint": "python3 gated_crash.py",
        "hyperparameters": {"gate": str(gate)},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "max_restarts": 0,
    }
    d = deploy(agents=1, slots=1, runtime="process")
    exp_id = d.create_experiment(config, context, tmp_path)
    trial_id = d.trial_of(exp_id)["id"]
    wait_for(lambda: "waiting for the gate" in d.trial_logs(trial_id), 120, "the trial to run")

    agent = d.process(AGENT)
    os.kill(agent.pid, signal.SIGKILL)  # the agent goes; its task lives on
    wait_for(lambda: not local.alive(agent), 10, "the agent to die")
    gate.touch()  # ... and crashes on its own while no agent watches it
    (folder,) = task_folders(d)
    wait_for(lambda: (folder / "exit.json").exists(), 30, "the task's exit")
    assert json.loads((folder / "exit.json").read_text())["exit_code"] == 1
    restart_agent(d)

    done = d.wait_trial_state(trial_id, {"STATE_ERROR"}, timeout=120)
    assert done["restarts"] == 1  # its own exit 1 counts, found by the agent's restart or not
