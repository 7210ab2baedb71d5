"""The examples on a real `det deploy local` deployment (process runtime).

Slow: each test starts a master and agents as processes and trains real trials: the digits
PyTorchTrial (a legacy `model_def:DigitsTrial` entrypoint) and the Core API example to
COMPLETED, and a digits trial paused after its first checkpoint that, once activated, trains on
exactly as an uninterrupted trial does (the same training loss at every reported step); the
adaptive ASHA config is accepted and runs its initial trials; distributed.yaml spans two agents
(one slot each, DDP over gloo) and its losses match one process with the same global batch.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.e2e.conftest import REPO, Deploy, Deployment, wait_for

pytestmark = pytest.mark.slow

DIGITS = REPO / "examples" / "digits"
CORE_API = REPO / "examples" / "core_api"
# A digits trial slowed down per batch, so that a pause lands mid-way (sleeping uses no RNG).
SLOW_TRIAL = """
import time
from model_def import DigitsTrial

class SlowDigitsTrial(DigitsTrial):
    def train_batch(self, batch, epoch_idx, batch_idx):
        time.sleep(0.03)
        return super().train_batch(batch, epoch_idx, batch_idx)
"""


def config_of(example: Path) -> dict[str, Any]:
    return YAML(typ="safe").load((example / "const.yaml").read_text())


def workloads(d: Deployment, trial_id: int) -> list[dict[str, Any]]:
    return d.get(f"/api/v1/trials/{trial_id}/workloads", limit=100_000)["workloads"]


def training_losses(d: Deployment, trial_id: int) -> dict[int, float]:
    out = {}
    for w in workloads(d, trial_id):
        if w.get("training"):
            t = w["training"]
            out[int(t["totalBatches"])] = float(t["metrics"]["avgMetrics"]["loss"])
    return out


def validations(d: Deployment, trial_id: int) -> dict[int, dict[str, float]]:
    return {
        int(w["validation"]["totalBatches"]): w["validation"]["metrics"]["avgMetrics"]
        for w in workloads(d, trial_id)
        if w.get("validation")
    }


def completed(d: Deployment, exp_id: int, timeout: float = 240) -> dict[str, Any]:
    trial = d.trial_of(exp_id)
    done = d.wait_trial_state(trial["id"], {"STATE_COMPLETED"}, timeout=timeout)
    wait_for(
        lambda: d.get(f"/api/v1/experiments/{exp_id}")["experiment"]["state"] == "STATE_COMPLETED",
        30,
        f"experiment {exp_id} COMPLETED",
    )
    return done


def test_digits_trains_to_completion(deploy: Deploy, tmp_path: Path) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    exp_id = d.create_experiment(config_of(DIGITS), DIGITS, tmp_path)
    trial = completed(d, exp_id)
    assert trial["restarts"] == 0
    losses = training_losses(d, trial["id"])
    assert sorted(losses) == list(range(10, 201, 10))  # scheduling_unit: 10, max_length: 200
    assert losses[200] < losses[10]
    vals = validations(d, trial["id"])
    assert sorted(vals) == [100, 200]  # min_validation_period: 100
    assert vals[200]["accuracy"] > 0.8, vals
    ckpts = {
        w["checkpoint"]["totalBatches"] for w in workloads(d, trial["id"]) if w.get("checkpoint")
    }
    assert {50, 100, 150, 200} <= {int(c) for c in ckpts}, ckpts


def test_core_api_example_trains_to_completion(deploy: Deploy, tmp_path: Path) -> None:
    d = deploy(agents=1, slots=1, runtime="process")
    exp_id = d.create_experiment(config_of(CORE_API), CORE_API, tmp_path)
    trial = completed(d, exp_id)
    losses = training_losses(d, trial["id"])
    assert sorted(losses) == list(range(10, 201, 10))
    assert losses[200] < losses[10]
    assert sorted(validations(d, trial["id"])) == [200]
    described = d.det("trial", "describe", str(trial["id"]))
    assert described.returncode == 0 and "COMPLETED" in described.stdout, described.stdout


def test_a_paused_digits_trial_resumes_with_an_uninterrupted_loss_curve(
    deploy: Deploy, tmp_path: Path
) -> None:
    context = tmp_path / "digits"
    shutil.copytree(DIGITS, context)
    (context / "slow_model_def.py").write_text(SLOW_TRIAL)
    config = {
        **config_of(DIGITS),
        "entrypoint": "slow_model_def:SlowDigitsTrial",
        "reproducibility": {"experiment_seed": 1234},
        "searcher": {
            "name": "single", "metric": "validation_loss", "smaller_is_better": True,
            "max_length": {"batches": 240},
        },
        "min_checkpoint_period": {"batches": 50},
        "min_validation_period": {"batches": 120},
    }  # fmt: skip
    d = deploy(agents=1, slots=2, runtime="process")
    whole_exp = d.create_experiment({**config, "name": "uninterrupted"}, context, tmp_path)
    paused_exp = d.create_experiment({**config, "name": "paused"}, context, tmp_path)
    paused_trial = d.trial_of(paused_exp)["id"]

    def has_checkpoint() -> bool:
        return any(w.get("checkpoint") for w in workloads(d, paused_trial))

    wait_for(has_checkpoint, 180, f"trial {paused_trial}'s first checkpoint", interval=0.1)
    d.post(f"/api/v1/experiments/{paused_exp}/pause")
    wait_for(
        lambda: d.get(f"/api/v1/experiments/{paused_exp}")["experiment"]["state"] == "STATE_PAUSED",
        90,
        "the experiment PAUSED",
    )
    wait_for(
        lambda: (
            d.trial(paused_trial)["state"] not in {"STATE_ACTIVE", "STATE_STOPPING_COMPLETED"}
            and not any(
                a.get("taskId", "").startswith(f"{paused_exp}.")
                for a in (d.get("/api/v1/tasks").get("allocationIdToSummary") or {}).values()
            )
        ),
        90,
        "the paused trial's allocation to end",
    )
    paused_at = max(training_losses(d, paused_trial))
    assert 50 <= paused_at < 240, paused_at  # it stopped mid-way
    d.post(f"/api/v1/experiments/{paused_exp}/activate")

    whole = training_losses(d, completed(d, whole_exp)["id"])
    resumed = training_losses(d, completed(d, paused_exp)["id"])
    assert sorted(resumed) == sorted(whole) == list(range(10, 241, 10))
    for step, loss in whole.items():
        assert abs(resumed[step] - loss) <= 1e-6, (step, resumed[step], loss)
    logs = "\n".join(d.trial_logs(paused_trial))
    assert "resumed from checkpoint" in logs, logs[-3000:]
    v_whole, v_resumed = validations(d, d.trial_of(whole_exp)["id"]), validations(d, paused_trial)
    assert abs(v_whole[240]["validation_loss"] - v_resumed[240]["validation_loss"]) <= 1e-6


def test_digits_adaptive_asha_searches_and_stops_losers_early(
    deploy: Deploy, tmp_path: Path
) -> None:
    """Issue 15: this search made 2 trials and ran both to the end. Rungs at 50 and 200
    batches (divisor 4): the losers of the first rung stop at 50 batches."""
    config = YAML(typ="safe").load((DIGITS / "adaptive.yaml").read_text())
    config["searcher"]["max_time"] = 200
    config["min_validation_period"] = {"batches": 50}
    config["min_checkpoint_period"] = {"batches": 50}
    d = deploy(agents=1, slots=2, runtime="process")
    exp_id = d.create_experiment(config, DIGITS, tmp_path)
    exp = wait_for(
        lambda: (
            (e := d.get(f"/api/v1/experiments/{exp_id}")["experiment"])["state"]
            in ("STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED")
            and e
        ),
        600,
        f"experiment {exp_id} to end",
        interval=1.0,
    )
    trials = d.get(f"/api/v1/experiments/{exp_id}/trials", limit=100)["trials"]
    assert exp["state"] == "STATE_COMPLETED" and len(trials) == 8
    assert len({json.dumps(t["hparams"], sort_keys=True) for t in trials}) == 8
    trained = sorted(max(training_losses(d, t["id"]), default=0) for t in trials)
    assert trained[0] < 200 and trained[-1] == 200, trained


def test_digits_distributed_on_two_agents_trains_like_one_process(
    deploy: Deploy, tmp_path: Path
) -> None:
    agents, slots = 2, 1  # one slot each: the trial spans both (gloo between the two)
    base = {
        "reproducibility": {"experiment_seed": 7},
        "min_checkpoint_period": {"batches": 50},
        "searcher": {**config_of(DIGITS)["searcher"], "max_length": {"batches": 100}},
    }
    dist_config = {
        **YAML(typ="safe").load((DIGITS / "distributed.yaml").read_text()),
        **base,
        "hyperparameters": {**config_of(DIGITS)["hyperparameters"], "global_batch_size": 64,
                            "dropout": 0.0},
    }  # fmt: skip
    single_config = {**config_of(DIGITS), **base, "hyperparameters": dist_config["hyperparameters"]}
    d = deploy(agents=agents, slots=slots, runtime="process")
    dist_exp = d.create_experiment(dist_config, DIGITS, tmp_path)
    dist_trial = completed(d, dist_exp, timeout=300)
    single_trial = completed(d, d.create_experiment(single_config, DIGITS, tmp_path))
    two, one = training_losses(d, dist_trial["id"]), training_losses(d, single_trial["id"])
    assert sorted(two) == sorted(one) == list(range(10, 101, 10))
    for step, loss in one.items():  # DDP over 2 x 32 = one process over 64, up to float sums
        assert abs(two[step] - loss) <= 1e-3 * max(1.0, loss), (step, two[step], loss)
    logs = "\n".join(d.trial_logs(dist_trial["id"]))
    for node in range(agents):  # the launch layer's line, from every container
        assert f"node {node} of {agents}, {slots} process(es)" in logs, logs[-2000:]
