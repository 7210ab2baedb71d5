"""Code written for Determined 0.38 runs unchanged on `det deploy local` (issue 13).

The training code in determined_style/ is what a Determined user has: `import determined as det`,
`det.LOG_FORMAT`, `det.get_cluster_info()`, `info.trial.hparams`, `info.latest_checkpoint`,
`det.core.init()`, a hand-made launcher over `det.core.DistributedContext`, a `PyTorchTrial`
started by `determined.launch.torch_distributed --trial`, and the Trainer API started by
`python3 -m determined.launch.torch_distributed python3 train.py`. It is submitted as is, with
our `det` and with the real determined==0.38.1 client, to tasks whose Python has no `determined`
(Resolute serves Determined's names from its harness) and to tasks whose Python has the real
package (which must find its cluster and report to the master). Each run must end COMPLETED
with its metrics, validations, checkpoints and progress at the master.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.compat.conftest import det_venv
from tests.e2e.conftest import Deploy, Deployment, docker_image_config, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.compat]

CODE = Path(__file__).resolve().parent / "determined_style"
STEPS = 12
SHIM = "harness/_compat/determined/__init__.py"


def real_det_venv() -> Path:
    venv = det_venv()
    if venv is None:
        reason = "the determined==0.38.1 venv is missing (scripts/setup.sh makes it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return venv


@pytest.fixture(scope="module")
def real_determined_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python as an image built for Determined has it: determined==0.38.1 and torch (the
    real package's Core API needs torch or TensorFlow for its TensorBoard writer). The real
    package's venv, with the project's site-packages (torch, tensorboard) layered after it."""
    real = real_det_venv()
    venv = tmp_path_factory.mktemp("det-torch") / "venv"
    python = str(real / "bin" / "python")
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    layers = [real_site := site_packages(real), site_packages(Path(sys.prefix))]
    assert (real_site / "determined").is_dir()
    (site_packages(venv) / "_layers.pth").write_text("".join(f"{p}\n" for p in layers))
    return venv / "bin" / "python"


def site_packages(venv: Path) -> Path:
    (found,) = (venv / "lib").glob("python3*/site-packages")
    return found


def core_config(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "entrypoint": "python3 core_train.py",
        "hyperparameters": {"steps": STEPS, "step_s": 0.05, "ckpt_every": 5, "lr": 0.1},
        "searcher": {
            "name": "single",
            "metric": "validation_loss",
            "smaller_is_better": True,
            "max_length": {"batches": STEPS},
        },
        "max_restarts": 0,
        **extra,
    }


def submit_with_real_client(d: Deployment, config: dict[str, Any], tmp_path: Path) -> int:
    """`det experiment create config.yaml DIR` with the real 0.38.1 client, as its user types it."""
    det = real_det_venv() / "bin" / "det"
    path = tmp_path / f"real-{time.monotonic_ns()}.yaml"
    path.write_text(json.dumps(config))
    env = {**d.env, "DET_MASTER": d.url}
    done = subprocess.run(
        [str(det), "experiment", "create", str(path), str(CODE)],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return max(e["id"] for e in d.get("/api/v1/experiments", limit=1000)["experiments"])


def completed(d: Deployment, exp_id: int, timeout: float = 240) -> list[dict[str, Any]]:
    trials = d.get(f"/api/v1/experiments/{exp_id}/trials")["trials"]
    assert trials, f"experiment {exp_id} has no trial"
    done = [d.wait_trial_state(t["id"], {"STATE_COMPLETED"}, timeout=timeout) for t in trials]
    wait_for(
        lambda: d.get(f"/api/v1/experiments/{exp_id}")["experiment"]["state"] == "STATE_COMPLETED",
        60,
        f"experiment {exp_id} COMPLETED",
    )
    return done


def assert_reported_everything(d: Deployment, exp_id: int, lr: float = 0.1) -> None:
    """Metrics of every step, the validation, the generic group, checkpoints and progress."""
    (trial,) = completed(d, exp_id)
    trial_id = trial["id"]
    assert d.training_steps(trial_id) == list(range(1, STEPS + 1))
    expected = (lr - 0.1) ** 2 + 1.0 / STEPS
    validation = trial["latestValidation"]["metrics"]["avgMetrics"]["validation_loss"]
    assert validation == pytest.approx(expected)
    checkpoints = d.get(f"/api/v1/trials/{trial_id}/checkpoints")["checkpoints"]
    steps = sorted(c["metadata"]["steps_completed"] for c in checkpoints)
    assert steps == [5, 10, STEPS], checkpoints
    assert all(c["state"] == "STATE_COMPLETED" for c in checkpoints)
    experiment = d.get(f"/api/v1/experiments/{exp_id}")["experiment"]
    assert experiment["progress"] == pytest.approx(1.0), experiment
    r = d.http.get(
        "/api/v1/trials/metrics/trial_metrics", params={"trialIds": trial_id, "group": "inference"}
    )
    assert r.status_code == 200, r.text[:300]
    reports = [m for line in r.text.splitlines() for m in json.loads(line)["result"]["metrics"]]
    assert [m["metrics"]["avg_metrics"] for m in reports] == [{"examples": STEPS * 8}], reports
    logs = d.trial_logs(trial_id)
    assert any("checkpoint" in line and "at step 5" in line for line in logs), logs[-20:]


def served_by(d: Deployment, exp_id: int) -> str:
    trial = d.get(f"/api/v1/experiments/{exp_id}/trials")["trials"][0]
    lines = [x for x in d.trial_logs(trial["id"]) if x.startswith("determined from ")]
    assert lines, d.trial_logs(trial["id"])[-20:]
    return lines[0].removeprefix("determined from ")


# --- the Core API, one slot ---------------------------------------------------------------------


@pytest.mark.parametrize("client", ["ours", "real"])
def test_core_api_code_runs_unchanged_where_the_task_has_no_determined(
    deploy: Deploy, tmp_path: Path, client: str
) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    config = core_config(f"core-shim-{client}")
    if client == "ours":
        exp_id = d.create_experiment(config, CODE, tmp_path)
    else:
        exp_id = submit_with_real_client(d, config, tmp_path)
    assert_reported_everything(d, exp_id)
    assert served_by(d, exp_id).endswith(SHIM)


def test_core_api_code_runs_unchanged_in_docker(deploy: Deploy, tmp_path: Path) -> None:
    image = docker_image_config()
    d = deploy(agents=1, slots=1, runtime="docker")
    exp_id = d.create_experiment({**core_config("core-docker"), **image}, CODE, tmp_path)
    assert_reported_everything(d, exp_id)
    assert served_by(d, exp_id).startswith("/run/determined/pylib/")


def test_the_real_determined_package_in_the_task_finds_its_cluster_on_the_process_runtime(
    deploy: Deploy, tmp_path: Path, real_determined_python: Path
) -> None:
    """The task's Python (environment.python) has determined==0.38.1: that package is used, not
    ours, and it reports to the master instead of running off-cluster."""
    d = deploy(agents=1, slots=1, runtime="process")
    config = core_config("core-real", environment={"python": str(real_determined_python)})
    exp_id = submit_with_real_client(d, config, tmp_path)
    assert_reported_everything(d, exp_id)
    real = str(real_det_venv())
    assert served_by(d, exp_id).startswith(real), served_by(d, exp_id)
    assert not Path("/determined_shared_fs/determined-checkpoint").exists() or all(
        not (Path("/determined_shared_fs/determined-checkpoint") / c["uuid"]).exists()
        for t in d.get(f"/api/v1/experiments/{exp_id}/trials")["trials"]
        for c in d.get(f"/api/v1/trials/{t['id']}/checkpoints")["checkpoints"]
    ), "the real package wrote its checkpoints outside the cluster's storage"


# --- distributed ---------------------------------------------------------------------------------


def test_a_hand_made_launcher_over_distributed_context_trains_on_two_slots(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=1, slots=2, runtime="process")
    config = core_config(
        "core-launcher", entrypoint="python3 launcher.py", resources={"slots_per_trial": 2}
    )
    exp_id = d.create_experiment(config, CODE, tmp_path)
    assert_reported_everything(d, exp_id)
    trial = d.get(f"/api/v1/experiments/{exp_id}/trials")["trials"][0]
    # Both workers write to the launcher's one stdout pipe. Under PYTHONUNBUFFERED (which the
    # process runtime passes on from the agent) print() is two writes, the text and then the
    # newline, so the two messages can share a line: each is whole, the line breaks are not.
    text = "\n".join(d.trial_logs(trial["id"]))
    assert "rank 0 of 2 started at step 0" in text and "rank 1 of 2 started at step 0" in text
    assert "workers exited [0, 0]" in text


def pytorch_config(name: str, entrypoint: str, slots: int) -> dict[str, Any]:
    return {
        "name": name,
        "entrypoint": entrypoint,
        "hyperparameters": {"lr": 0.05, "global_batch_size": 32, "batches": 20},
        "searcher": {
            "name": "single",
            "metric": "validation_loss",
            "smaller_is_better": True,
            "max_length": {"batches": 20},
        },
        "min_validation_period": {"batches": 10},
        "min_checkpoint_period": {"batches": 10},
        "resources": {"slots_per_trial": slots},
        "max_restarts": 0,
    }


def assert_learned(d: Deployment, exp_id: int) -> dict[str, Any]:
    (trial,) = completed(d, exp_id, timeout=300)
    trial_id = trial["id"]
    steps = d.training_steps(trial_id)
    assert steps and max(steps) == 20, steps
    workloads = d.get(f"/api/v1/trials/{trial_id}/workloads", limit=1000)["workloads"]
    losses = [
        float(w["validation"]["metrics"]["avgMetrics"]["validation_loss"])
        for w in workloads
        if w.get("validation")
    ]
    assert len(losses) >= 2 and losses[-1] < losses[0], losses  # it trains
    checkpoints = d.get(f"/api/v1/trials/{trial_id}/checkpoints")["checkpoints"]
    assert checkpoints and all(c["state"] == "STATE_COMPLETED" for c in checkpoints)
    return trial


def test_a_pytorch_trial_through_the_legacy_trial_flag_spans_two_agents(
    deploy: Deploy, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    d = deploy(agents=2, slots=1, runtime="process")
    config = pytorch_config(
        "pytorch-legacy",
        "python3 -m determined.launch.torch_distributed --trial model_def:LinearTrial",
        slots=2,
    )
    exp_id = submit_with_real_client(d, config, tmp_path)
    trial = assert_learned(d, exp_id)
    agents = {a for a in ("local-agent-0", "local-agent-1") if logs_from(d, trial["id"], a)}
    assert agents == {"local-agent-0", "local-agent-1"}, "one worker on each agent"


def logs_from(d: Deployment, trial_id: int, agent_id: str) -> list[str]:
    r = d.http.get(f"/api/v1/trials/{trial_id}/logs", params={"agentIds": agent_id})
    assert r.status_code == 200, r.text[:300]
    return [line for line in r.text.splitlines() if line.strip()]


def test_the_trainer_api_started_by_the_torch_distributed_launcher(
    deploy: Deploy, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    d = deploy(agents=1, slots=2, runtime="process")
    config = pytorch_config(
        "pytorch-trainer",
        "python3 -m determined.launch.torch_distributed python3 train.py",
        slots=2,
    )
    exp_id = d.create_experiment(config, CODE, tmp_path)
    trial = assert_learned(d, exp_id)
    logs = "\n".join(d.trial_logs(trial["id"]))
    assert "rank 0 of 2" in logs and "rank 1 of 2" in logs, logs[-2000:]


# --- a search whose trials read their hyperparameters --------------------------------------------


def test_an_adaptive_search_whose_trials_read_info_trial_hparams(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=1, slots=2, runtime="process")
    config = core_config("core-adaptive")
    config["hyperparameters"]["lr"] = {"type": "double", "minval": 0.01, "maxval": 0.5}
    config["searcher"] = {  # Determined 0.38's form: time_metric and max_time
        "name": "adaptive_asha",
        "metric": "validation_loss",
        "smaller_is_better": True,
        "time_metric": "batches",
        "max_time": STEPS,
        "max_trials": 2,
        "max_concurrent_trials": 2,
    }
    exp_id = submit_with_real_client(d, config, tmp_path)
    trials = wait_for(
        lambda: len(t := d.get(f"/api/v1/experiments/{exp_id}/trials")["trials"]) >= 2 and t,
        60,
        "the search's trials",
    )
    lrs = set()
    for trial in trials:
        done = d.wait_trial_state(trial["id"], {"STATE_COMPLETED"}, timeout=240)
        lr = float(done["hparams"]["lr"])
        lrs.add(lr)
        # The trial computed its loss from the lr it read from info.trial.hparams.
        validation = done["latestValidation"]["metrics"]["avgMetrics"]["validation_loss"]
        assert validation == pytest.approx((lr - 0.1) ** 2 + 1.0 / STEPS), (lr, validation)
    assert len(lrs) == len(trials), "each trial its own sample"


# --- loud failures --------------------------------------------------------------------------------


def test_a_task_that_cannot_reach_the_master_fails_loudly(deploy: Deploy, tmp_path: Path) -> None:
    """Never a silent off-cluster run: ERROR, with the reason in the trial's logs."""
    d = deploy(agents=1, slots=1, runtime="process")
    # The task sees a master address nothing answers at (a mistyped or firewalled address).
    # It would ride out an outage of 180 s first (RetryPolicy); 5 s of it shows the same end.
    config = core_config(
        "core-unreachable",
        entrypoint="sh -c 'DET_MASTER=http://127.0.0.1:9 RESOLUTE_MASTER_OUTAGE_S=5 "
        "exec python3 core_train.py'",
    )
    exp_id = d.create_experiment(config, CODE, tmp_path)
    trial = d.trial_of(exp_id)
    d.wait_trial_state(trial["id"], {"STATE_ERROR"}, timeout=240)
    logs = "\n".join(d.trial_logs(trial["id"]))
    assert "NotOnCluster" in logs and "127.0.0.1:9" in logs, logs[-3000:]
    assert d.training_steps(trial["id"]) == []
