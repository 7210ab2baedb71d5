"""The search-efficiency benchmark's peers, run in benchmarks/.peer-venv (Ray Tune, Optuna).

`python search_peers.py ray|optuna SEED TARGET MAX_TRIALS BUDGET` trains the same NumPy task
(search_task.py) and prints one JSON line: the epochs trained, all trials together, until the
first validation accuracy >= TARGET (null if never), every report's accuracy in the order they
came (so a lower target's first hit can be read from the same run), the best accuracy and the
wall time. Both run 4 trials at once and stop as soon as the target is reached.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_task import MAX_EPOCHS, init, train_epoch

WORKERS = 4


def _ray(seed: int, target: float, max_trials: int, budget: int) -> dict[str, Any]:
    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search import BasicVariantGenerator

    here = str(Path(__file__).resolve().parent)
    ray.init(
        num_cpus=WORKERS,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": here}},
    )

    def trainable(config: dict[str, Any]) -> None:
        from search_task import init as task_init
        from search_task import train_epoch as task_epoch

        state = task_init(config, int(config["seed"]))
        for epoch in range(1, MAX_EPOCHS + 1):
            state, accuracy = task_epoch(config, state)
            tune.report({"accuracy": accuracy, "epochs": epoch, "t": time.time()})

    class Target(tune.Stopper):
        def __init__(self) -> None:
            self.hit = False
            self.reports = 0

        def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
            self.reports += 1
            self.hit = self.hit or result["accuracy"] >= target
            return False

        def stop_all(self) -> bool:
            return self.hit or self.reports >= budget

    space = {
        "lr": tune.loguniform(10**-3.5, 10**0.5),
        "hidden": tune.randint(4, 97),
        "momentum": tune.uniform(0.0, 0.95),
        "weight_decay": tune.loguniform(1e-6, 1e-1),
        "batch_size": tune.choice([16, 32, 64, 128, 256]),
        "seed": tune.randint(0, 2**31 - 1),
    }
    scheduler = ASHAScheduler(
        time_attr="epochs",
        metric="accuracy",
        mode="max",
        max_t=MAX_EPOCHS,
        grace_period=1,
        reduction_factor=3,
    )
    started = time.perf_counter()
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        param_space=space,
        tune_config=tune.TuneConfig(
            scheduler=scheduler,
            search_alg=BasicVariantGenerator(random_state=seed, max_concurrent=WORKERS),
            num_samples=max_trials,
            max_concurrent_trials=WORKERS,
        ),
        run_config=tune.RunConfig(
            stop=Target(), verbose=0, log_to_file=False, storage_path=tempfile.mkdtemp()
        ),
    )
    results = tuner.fit()
    wall = time.perf_counter() - started
    reports: list[tuple[float, float]] = []
    for result in results:
        frame = result.metrics_dataframe
        if frame is not None and "accuracy" in frame:
            reports += list(zip(frame["t"], frame["accuracy"], strict=True))
    reports.sort()
    ray.shutdown()
    return _summary([acc for _, acc in reports], target, wall)


def _optuna(seed: int, target: float, max_trials: int, budget: int) -> dict[str, Any]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    lock = threading.Lock()
    reports: list[float] = []

    def objective(trial: optuna.Trial) -> float:
        hparams = {
            "lr": 10 ** trial.suggest_float("lr_exp", -3.5, 0.5),
            "hidden": trial.suggest_int("hidden", 4, 96),
            "momentum": trial.suggest_float("momentum", 0.0, 0.95),
            "weight_decay": 10 ** trial.suggest_float("wd_exp", -6, -1),
            "batch_size": trial.suggest_categorical("batch_size", [16, 32, 64, 128, 256]),
        }
        state = init(hparams, seed * 100_003 + trial.number)
        accuracy = 0.0
        for epoch in range(1, MAX_EPOCHS + 1):
            state, accuracy = train_epoch(hparams, state)
            with lock:
                reports.append(accuracy)
                if accuracy >= target or len(reports) >= budget:
                    study.stop()
                    return accuracy
            trial.report(accuracy, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return accuracy

    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3),
    )
    started = time.perf_counter()
    study.optimize(objective, n_trials=max_trials, n_jobs=WORKERS)
    return _summary(reports, target, time.perf_counter() - started)


def _summary(accuracies: list[float], target: float, wall: float) -> dict[str, Any]:
    hit = next((i + 1 for i, acc in enumerate(accuracies) if acc >= target), None)
    return {
        "epochs_to_target": hit,
        "accuracies": accuracies,
        "epochs": len(accuracies),
        "best": max(accuracies, default=0.0),
        "wall_s": wall,
    }


def main() -> None:
    peer, seed, target, max_trials, budget = sys.argv[1:6]
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    run = _ray if peer == "ray" else _optuna
    print(json.dumps(run(int(seed), float(target), int(max_trials), int(budget))), flush=True)


if __name__ == "__main__":
    main()
