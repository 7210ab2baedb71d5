"""Hyperparameter searches end to end on `det deploy local` (issue 15): a master and an agent
as processes, trials running `workload/search.py` with the harness, submitted with our `det`
and the real determined 0.38.1 client.

What users saw before: adaptive ASHA (max_trials 8, max_concurrent_trials 2) made 2 trials and
ran both to the end; random (max_trials 6, max_concurrent_trials 2) ended with 2 trials.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from controlplane.domain.searcher import Create, TrialClosed, TrialCreated, make_searcher
from tests.e2e.conftest import WORKLOAD, Deploy, Deployment, wait_for
from tests.e2e.test_determined_code import real_det_venv

pytestmark = pytest.mark.slow

TERMINAL = {"STATE_COMPLETED", "STATE_CANCELED", "STATE_ERROR"}
STEPS = 9
TERMINAL_ROWS = {"COMPLETED", "CANCELED", "ERROR"}


def search_config(searcher: dict[str, Any], **hparams: Any) -> dict[str, Any]:
    return {
        "name": f"e2e-{searcher['name']}",
        "entrypoint": "python3 search.py",
        "hyperparameters": {
            "steps": STEPS,
            "step_s": 0.1,
            "x": {"type": "double", "minval": -1.0, "maxval": 1.0},
            **hparams,
        },
        "searcher": {"metric": "loss", "smaller_is_better": True, **searcher},
        "reproducibility": {"experiment_seed": 11},
        "max_restarts": 0,
    }


def finished(d: Deployment, exp_id: int, timeout: float = 300) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        exp = d.get(f"/api/v1/experiments/{exp_id}")["experiment"]
        return exp if exp["state"] in TERMINAL else None

    return wait_for(ended, timeout, f"experiment {exp_id} to end", interval=0.5)


def trials_of(d: Deployment, exp_id: int) -> list[dict[str, Any]]:
    return d.get(f"/api/v1/experiments/{exp_id}/trials", limit=1000)["trials"]


def most_alive_at_once(d: Deployment, exp_id: int) -> int:
    """The most trials the searcher had alive at once: each from its creation until it was
    closed (STOPPING_COMPLETED, draining after a searcher decision, or ended). Read from the
    master's state history in its SQLite database (trials are made in the transaction that
    closes another, so the history is exact)."""
    db = sqlite3.connect(f"file:{d.data_dir / 'resolute.db'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT s.entity_id, s.from_state, s.to_state, s.id FROM state_changes s"
            " JOIN trials t ON CAST(t.id AS TEXT) = s.entity_id"
            " WHERE s.entity = 'trial' AND t.experiment_id = ? ORDER BY s.id",
            (exp_id,),
        ).fetchall()
    finally:
        db.close()
    alive: set[str] = set()
    most = 0
    for trial, before, after, _ in rows:
        if before is None and after in ("ACTIVE", "PAUSED"):
            alive.add(trial)
        elif after.startswith("STOPPING_") or after in TERMINAL_ROWS:
            alive.discard(trial)
        most = max(most, len(alive))
    return most


def test_adaptive_asha_stops_losers_early(deploy: Deploy, tmp_path: Path) -> None:
    d = deploy(agents=1, slots=2)
    searcher = {
        "name": "adaptive_asha", "max_trials": 8, "max_concurrent_trials": 2, "max_time": STEPS,
        "time_metric": "batches", "divisor": 3, "mode": "aggressive",
    }  # fmt: skip
    exp_id = d.create_experiment(search_config(searcher), WORKLOAD, tmp_path)
    exp = finished(d, exp_id)
    trials = trials_of(d, exp_id)
    assert exp["state"] == "STATE_COMPLETED", d.log_tails()
    assert len(trials) == 8
    assert most_alive_at_once(d, exp_id) <= 2
    steps = sorted(t["totalBatchesProcessed"] for t in trials)
    assert steps[0] < STEPS, steps  # a loser was stopped at a lower rung
    assert steps[-1] == STEPS, steps  # the best went the whole way
    assert all(t["state"] == "STATE_COMPLETED" for t in trials)
    described = d.det("experiment", "describe", str(exp_id), "--json")
    assert described.returncode == 0, described.stderr
    body = json.loads(described.stdout)
    assert len(body["trials"]) == 8


def test_random_respects_max_concurrent_and_reaches_max_trials(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=1, slots=3)
    cfg = search_config({"name": "random", "max_trials": 6, "max_concurrent_trials": 2})
    exp_id = submit_with_real_client(d, cfg, tmp_path)
    exp = finished(d, exp_id)
    trials = trials_of(d, exp_id)
    assert exp["state"] == "STATE_COMPLETED" and len(trials) == 6
    assert most_alive_at_once(d, exp_id) == 2
    assert len({json.dumps(t["hparams"], sort_keys=True) for t in trials}) == 6
    described = real_det(d, "experiment", "describe", str(exp_id), "--json")
    assert described.returncode == 0, described.stdout + described.stderr


def test_grid_creates_the_product(deploy: Deploy, tmp_path: Path) -> None:
    d = deploy(agents=1, slots=2)
    cfg = search_config(
        {"name": "grid", "max_concurrent_trials": 2},
        x={"type": "categorical", "vals": [0.1, 0.3, 0.5]},
        step_s={"type": "categorical", "vals": [0.01, 0.02]},
    )
    cfg["hyperparameters"]["steps"] = 2
    exp_id = d.create_experiment(cfg, WORKLOAD, tmp_path)
    assert finished(d, exp_id)["state"] == "STATE_COMPLETED"
    points = sorted((t["hparams"]["x"], t["hparams"]["step_s"]) for t in trials_of(d, exp_id))
    assert points == sorted(itertools.product([0.1, 0.3, 0.5], [0.01, 0.02]))


def test_a_master_killed_mid_search_continues_it_exactly(deploy: Deploy, tmp_path: Path) -> None:
    d = deploy(agents=1, slots=2)
    searcher = {"name": "random", "max_trials": 6, "max_concurrent_trials": 2}
    cfg = search_config(searcher, step_s=0.3)
    exp_id = d.create_experiment(cfg, WORKLOAD, tmp_path)
    wait_for(lambda: len(trials_of(d, exp_id)) >= 4, 120, "the search to be under way")
    d.kill9("master")
    d.restart_master()
    exp = finished(d, exp_id)
    trials = sorted(trials_of(d, exp_id), key=lambda t: t["id"])
    assert exp["state"] == "STATE_COMPLETED", d.log_tails()
    assert len(trials) == 6 and most_alive_at_once(d, exp_id) <= 2
    # A random search draws hyperparameters in creation order: an uninterrupted pure searcher
    # told of the same closings creates exactly these trials.
    expanded = d.get(f"/api/v1/experiments/{exp_id}")["config"]
    pure = make_searcher(expanded["searcher"], expanded["hyperparameters"], 11)
    expected = [op for op in pure.initial_operations() if isinstance(op, Create)]
    for op in list(expected):
        pure.on_event(TrialCreated(op.request_id))
    closed = 0
    while closed < len(expected):
        for new in pure.on_event(TrialClosed(expected[closed].request_id)):
            if isinstance(new, Create):
                expected.append(new)
                pure.on_event(TrialCreated(new.request_id))
        closed += 1
    assert [t["hparams"] for t in trials] == [op.hparams for op in expected]


def test_a_metric_never_reported_says_so_and_errors(deploy: Deploy, tmp_path: Path) -> None:
    """ASHA decides by the metric; a searcher that never reads it (single, random, grid)
    completes without it, as in Determined (tests/e2e/test_generic_metrics.py)."""
    d = deploy(agents=1, slots=1)
    searcher = {"name": "adaptive_asha", "max_trials": 1, "max_time": STEPS}
    cfg = search_config({**searcher, "time_metric": "batches"})
    cfg["searcher"]["metric"] = "accuracy"
    exp_id = d.create_experiment(cfg, WORKLOAD, tmp_path)
    exp = finished(d, exp_id, timeout=120)
    assert exp["state"] == "STATE_ERROR"
    (trial,) = trials_of(d, exp_id)
    logs = "\n".join(d.trial_logs(trial["id"]))
    assert "lacks the metric 'accuracy'" in logs, logs[-2000:]


def submit_with_real_client(d: Deployment, config: dict[str, Any], tmp_path: Path) -> int:
    path = tmp_path / "real.yaml"
    path.write_text(json.dumps(config))
    done = real_det(d, "experiment", "create", str(path), str(WORKLOAD))
    assert done.returncode == 0, done.stdout + done.stderr
    return max(e["id"] for e in d.get("/api/v1/experiments", limit=1000)["experiments"])


def real_det(d: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    det = real_det_venv() / "bin" / "det"
    env = {**d.env, "DET_MASTER": d.url}
    return subprocess.run([str(det), *args], env=env, capture_output=True, text=True, timeout=180)
