"""CPU time of the pure searchers per trial, persisted state included.

    .venv/bin/python -m benchmarks.searcher_cost [--trials 10000]

A search of N trials whose trials finish at once with synthetic metrics (one validation report
per rung, then closed); after every event the searcher's snapshot is serialised to JSON, as the
master persists it with every decision. Prints CPU ms per trial and the largest snapshot. This
is the searcher's share of the issue's "≤ 5 ms of master CPU per trial" (the experiment's rows
and tasks are the rest); TPE is shown for 500 trials (its sampler refits on every trial).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from controlplane.domain.searcher import (
    Close,
    Create,
    Event,
    TrialClosed,
    TrialCreated,
    ValidationReported,
    make_searcher,
)

SPACE = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10, "count": 10},
    "layers": {"type": "int", "minval": 1, "maxval": 100, "count": 100},
    "opt": {"type": "categorical", "vals": ["sgd", "adam", "rmsprop", "adagrad", "lion"]},
    "drop": {"type": "double", "minval": 0.0, "maxval": 0.5, "count": 2},
}


def _configs(trials: int) -> dict[str, dict[str, Any]]:
    asha = {"metric": "loss", "time_metric": "batches", "max_time": 81, "divisor": 3}
    return {
        "random": {"name": "random", "metric": "loss", "max_trials": trials},
        "grid": {"name": "grid", "metric": "loss"},
        "async_halving": {**asha, "name": "async_halving", "num_rungs": 4, "max_trials": trials},
        "adaptive_asha": {**asha, "name": "adaptive_asha", "max_trials": trials},
        "adaptive_asha + promotions": {
            **asha,
            "name": "adaptive_asha",
            "max_trials": trials,
            "promotions": True,
        },
        "tpe": {"name": "tpe", "metric": "loss", "max_trials": min(trials, 500)},
    }


def run(config: dict[str, Any]) -> tuple[int, float, int]:
    searcher = make_searcher(config, SPACE, 7)
    noise = random.Random(7)
    queue: list[Event] = []
    created = 0
    biggest = 0

    def take(ops: list[Any]) -> None:
        nonlocal created
        for op in ops:
            if isinstance(op, Create):
                created += 1
                queue.append(TrialCreated(op.request_id))
                for batches in (1, 3, 9, 27, 81):
                    metrics = {"loss": noise.random(), "batches": batches}
                    queue.append(ValidationReported(op.request_id, metrics))
                queue.append(TrialClosed(op.request_id))
            elif isinstance(op, Close):
                pass  # the trial's remaining events are ignored by the searcher

    started = time.process_time()
    take(searcher.initial_operations())
    while queue:
        take(searcher.on_event(queue.pop(0)))
        biggest = max(biggest, len(json.dumps(searcher.snapshot())))
    return created, time.process_time() - started, biggest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--only", nargs="*", help="searcher rows to run (default: all)")
    args = parser.parse_args()
    print(f"searcher CPU per trial, JSON snapshot after every event ({args.trials} trials)")
    print("| searcher | trials | CPU ms / trial | largest snapshot (KiB) |")
    print("|---|---|---|---|")
    for name, config in _configs(args.trials).items():
        if args.only and name not in args.only:
            continue
        created, cpu, biggest = run(config)
        print(f"| {name} | {created} | {cpu * 1000 / created:.2f} | {biggest / 1024:.0f} |")


if __name__ == "__main__":
    main()
