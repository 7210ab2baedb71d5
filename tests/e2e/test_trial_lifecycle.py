"""A trial's life on a real `det deploy local` deployment: train, survive, pause, fail.

Slow: each test starts a master and agents as processes and runs real trials.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.e2e.conftest import (
    EXAMPLE,
    TERMINAL,
    WORKLOAD,
    Deploy,
    Deployment,
    docker_image_config,
    steps_config,
    wait_for,
)

pytestmark = pytest.mark.slow


def hello_config() -> dict:
    return YAML(typ="safe").load((EXAMPLE / "const.yaml").read_text())


def assert_trained_and_described(d: Deployment, exp_id: int) -> None:
    trial = d.trial_of(exp_id)
    done = d.wait_trial_state(trial["id"], {"STATE_COMPLETED"}, timeout=240)
    assert done["restarts"] == 0
    assert done.get("latestTraining"), done
    metric_names = set(done["latestTraining"]["metrics"]["avgMetrics"])
    assert metric_names, done["latestTraining"]
    wait_for(
        lambda: d.get(f"/api/v1/experiments/{exp_id}")["experiment"]["state"] == "STATE_COMPLETED",
        30,
        f"experiment {exp_id} COMPLETED",
    )

    described = d.det("trial", "describe", str(trial["id"]))
    assert described.returncode == 0, described.stderr
    for name in metric_names:
        assert name in described.stdout, described.stdout
    assert "COMPLETED" in described.stdout
    experiment = d.det("experiment", "describe", str(exp_id))
    assert experiment.returncode == 0 and "COMPLETED" in experiment.stdout, experiment.stdout


def test_hello_trains_to_completion_on_the_process_runtime(deploy: Deploy, tmp_path: Path) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    exp_id = d.create_experiment(hello_config(), EXAMPLE, tmp_path)
    assert_trained_and_described(d, exp_id)


def test_hello_trains_to_completion_on_the_docker_runtime(deploy: Deploy, tmp_path: Path) -> None:
    config = {**hello_config(), **docker_image_config()}
    d = deploy(agents=1, slots=1, runtime="docker")
    exp_id = d.create_experiment(config, EXAMPLE, tmp_path)
    assert_trained_and_described(d, exp_id)


def test_master_killed_mid_training_the_trial_keeps_running(deploy: Deploy, tmp_path: Path) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    exp_id = d.create_experiment(steps_config(40, 0.25, 10), WORKLOAD, tmp_path)
    trial_id = d.trial_of(exp_id)["id"]
    d.wait_steps(trial_id, 4, timeout=120)

    d.kill9("master")
    time.sleep(2)  # the task keeps training (and retrying its reports) while no master answers
    d.restart_master()

    done = d.wait_trial_state(trial_id, {"STATE_COMPLETED"}, timeout=180)
    assert done["restarts"] == 0
    logs = d.trial_logs(trial_id)
    starts = [line for line in logs if "started at step" in line]
    assert starts == ["started at step 0 (run 1)"], starts  # one run, never restarted
    assert "done" in logs
    assert d.training_steps(trial_id) == list(range(1, 41))  # nothing lost while it was down


def test_agent_lost_mid_training_the_trial_is_requeued_without_a_restart(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=2, slots=1, runtime="process")
    exp_id = d.create_experiment(steps_config(30, 0.25, 5), WORKLOAD, tmp_path)
    trial_id = d.trial_of(exp_id)["id"]
    d.wait_steps(trial_id, 7, timeout=120)

    # The machine dies: its agent and the agent's tasks (kill -9 the agent, and the task's
    # supervisor; the task dies with it). The other agent stays.
    (victim,) = [a for a in ("local-agent-0", "local-agent-1") if d.task_supervisors(a)]
    tasks = d.task_supervisors(victim)
    d.kill9(victim)
    for task in tasks:
        os.kill(task.pid, signal.SIGKILL)

    done = d.wait_trial_state(trial_id, {"STATE_COMPLETED"}, timeout=240)
    assert done["restarts"] == 0  # an agent failure is not the trial's fault
    logs = d.trial_logs(trial_id)
    starts = [line for line in logs if "started at step" in line]
    assert len(starts) == 2 and starts[0] == "started at step 0 (run 1)", starts
    resumed_at = int(re.search(r"started at step (\d+)", starts[1]).group(1))
    assert resumed_at >= 5 and resumed_at % 5 == 0, starts  # from its latest checkpoint
    assert "done" in logs
    # One live value per step: what the lost run reported past its checkpoint is archived.
    assert d.training_steps(trial_id) == list(range(1, 31))


def test_pause_then_activate_resumes_from_the_checkpoint_at_the_same_step(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    exp_id = d.create_experiment(steps_config(40, 0.25, 1000), WORKLOAD, tmp_path)
    trial_id = d.trial_of(exp_id)["id"]
    d.wait_steps(trial_id, 5, timeout=120)

    d.post(f"/api/v1/experiments/{exp_id}/pause")
    wait_for(
        lambda: any("preempted at step" in line for line in d.trial_logs(trial_id)),
        60,
        "the trial to checkpoint and exit on preemption",
    )
    wait_for(
        lambda: (
            d.get(f"/api/v1/experiments/{exp_id}")["experiment"]["state"] == "STATE_PAUSED"
            and not d.get("/api/v1/tasks").get("allocationIdToSummary")
        ),
        60,
        "the experiment PAUSED with no allocation left",
    )
    marks = [re.search(r"preempted at step (\d+)", line) for line in d.trial_logs(trial_id)]
    paused_at = int(next(m.group(1) for m in marks if m))
    assert d.trial(trial_id)["restarts"] == 0

    d.post(f"/api/v1/experiments/{exp_id}/activate")
    done = d.wait_trial_state(trial_id, {"STATE_COMPLETED"}, timeout=180)
    assert done["restarts"] == 0
    starts = [line for line in d.trial_logs(trial_id) if "started at step" in line]
    assert starts[0] == "started at step 0 (run 1)", starts
    assert starts[1].startswith(f"started at step {paused_at} "), (paused_at, starts)
    assert d.training_steps(trial_id) == list(range(1, 41))  # one live value per step


# --- bad input ---------------------------------------------------------------------------------


def test_an_image_that_does_not_exist_errors_with_a_clear_message(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=1, slots=1, runtime="docker")
    config = {**hello_config(), "max_restarts": 0}
    config["environment"] = {"image": "resolute-no-such-image:never"}
    exp_id = d.create_experiment(config, EXAMPLE, tmp_path)
    trial_id = d.trial_of(exp_id)["id"]
    d.wait_trial_state(trial_id, {"STATE_ERROR"}, timeout=120)
    logs = "\n".join(d.trial_logs(trial_id))
    assert "resolute-no-such-image:never" in logs, logs


def test_an_entrypoint_that_crashes_at_once_uses_up_max_restarts_then_errors(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    config = {
        **hello_config(),
        "entrypoint": "python3 -c \"print('crashing now', flush=True); raise SystemExit(3)\"",
        "max_restarts": 1,
    }
    exp_id = d.create_experiment(config, EXAMPLE, tmp_path)
    trial_id = d.trial_of(exp_id)["id"]
    done = d.wait_trial_state(trial_id, {"STATE_ERROR"}, timeout=120)
    # Determined counts each failure and errors once the count exceeds max_restarts: 2 runs.
    assert done["restarts"] == 2, done
    runs = [line for line in d.trial_logs(trial_id) if line == "crashing now"]
    assert len(runs) == 2, d.trial_logs(trial_id)


def test_a_task_that_ignores_sigterm_still_ends_when_killed(deploy: Deploy, tmp_path: Path) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    config = {**hello_config(), "entrypoint": "python3 stubborn.py", "max_restarts": 0}
    exp_id = d.create_experiment(config, WORKLOAD, tmp_path)
    trial_id = d.trial_of(exp_id)["id"]
    wait_for(lambda: "stubborn task running" in d.trial_logs(trial_id), 120, "the stubborn task")
    d.post(f"/api/v1/experiments/{exp_id}/kill")
    t = d.wait_trial_state(trial_id, TERMINAL, timeout=90)
    assert t["state"] in ("STATE_CANCELED", "STATE_COMPLETED", "STATE_ERROR"), t
    wait_for(lambda: not d.task_supervisors("local-agent-0"), 30, "the task's processes to end")


def test_binary_and_enormous_output_is_stored(deploy: Deploy, tmp_path: Path) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    config = {**hello_config(), "entrypoint": "python3 noisy.py", "max_restarts": 0}
    exp_id = d.create_experiment(config, WORKLOAD, tmp_path)
    trial_id = d.trial_of(exp_id)["id"]
    d.wait_trial_state(trial_id, {"STATE_COMPLETED"}, timeout=120)

    logs = d.trial_logs(trial_id)
    assert "done" in logs, logs[-5:]
    binary = next(line for line in logs if line.startswith("binary: "))
    assert binary.endswith(" end") and "\ufffd" in binary  # undecodable bytes replaced, kept
    big = sum(len(line) for line in logs if line and set(line) == {"A"})
    assert big == 5 * 1024 * 1024  # split into pieces, every byte kept
    cli = d.det("trial", "logs", str(trial_id), timeout=180)
    assert cli.returncode == 0 and "done" in cli.stdout, cli.stderr
