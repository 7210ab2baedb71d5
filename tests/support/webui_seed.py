"""Many experiments, trials and metric rows written straight into a master's database with bulk
ORM inserts (10,000 experiments through the API would take most of a CI run).

Everything is a function of the index, so a test computes what a filter must match from the
same rules (`expected_*`) instead of trusting the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, insert, select, text

from controlplane.db.models import Experiment, Metric, MetricRollup, Task, Trial, TrialHparam
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.domain.hparam_values import flatten_hparams
from controlplane.domain.series_rollup import rollup
from controlplane.services import metric_rollups

STATES = ("COMPLETED", "CANCELED", "ERROR", "COMPLETED", "PAUSED")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Seeded:
    experiment_ids: list[int]
    trial_ids: list[int]


def state_of(i: int) -> str:
    return STATES[i % len(STATES)]


def layers_of(i: int) -> int:
    return i % 7


def labels_of(i: int, marked: int) -> list[str]:
    return ["marked"] if i < marked else [f"group-{i % 10}"]


def dropout_of(i: int, j: int) -> float:
    """What trial j of experiment i sampled from the config's `dropout` range [0, 0.5]."""
    return round(((i * 31 + j * 17) % 50) / 100, 2)


def metric_of(i: int, j: int) -> float:
    return round(((i * 7919 + j * 104729) % 10007) / 10007, 6)


def _config(i: int, name: str) -> dict:
    return {
        "name": name,
        "searcher": {"name": "random", "metric": "validation_loss", "smaller_is_better": True},
        "hyperparameters": {
            "lr": {"type": "const", "val": round(0.001 * (1 + i % 20), 4)},
            "layers": {"type": "const", "val": layers_of(i)},
            "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5},
        },
        "resources": {"slots_per_trial": 1},
    }


async def seed(
    url: str,
    *,
    owner_id: int,
    experiments: int,
    trials_per: int,
    project_id: int = 1,
    marked: int = 0,
    prefix: str = "seed",
    hparams_of: Callable[[int, int], dict] | None = None,
) -> Seeded:
    """`experiments` experiments of `owner_id` with `trials_per` trials each, one validation
    report per trial; the first `marked` carry the label "marked". `hparams_of(i, j)` gives trial
    j of experiment i its own hyperparameters (by default all trials of an experiment share)."""
    engine = make_engine(url)
    factory = make_sessionmaker(engine)
    try:
        async with transaction(factory) as s:
            base = (await s.scalar(select(func.max(Experiment.id)))) or 0
            exps, tasks, trials = [], [], []
            for i in range(experiments):
                exp_id = base + 1 + i
                name = f"{prefix}-{i}"
                exps.append(
                    {
                        "id": exp_id,
                        "project_id": project_id,
                        "owner_id": owner_id,
                        "name": name,
                        "description": "",
                        "notes": "",
                        "labels": labels_of(i, marked),
                        "state": state_of(i),
                        "config": _config(i, name),
                        "original_config": f"name: {name}\n",
                        "searcher_type": "random",
                        "resource_pool": "default",
                        "archived": False,
                        "job_id": f"{prefix}-job-{exp_id}",
                        "progress": 1.0,
                        "start_time": T0 + timedelta(minutes=i),
                        "end_time": T0 + timedelta(minutes=i + 1),
                    }
                )
                for j in range(trials_per):
                    task_id = f"{prefix}-{exp_id}.{j}"
                    tasks.append(
                        {
                            "task_id": task_id,
                            "task_type": "TRIAL",
                            "job_id": f"{prefix}-job-{exp_id}",
                            "owner_id": owner_id,
                            "start_time": T0,
                        }
                    )
                    trials.append(
                        {
                            "experiment_id": exp_id,
                            "task_id": task_id,
                            "request_id": task_id,
                            "state": "COMPLETED",
                            "hparams": hparams_of(i, j)
                            if hparams_of
                            else {
                                "lr": 0.001 * (1 + i % 20),
                                "layers": layers_of(i),
                                "dropout": dropout_of(i, j),
                            },
                            "seed": j,
                            "total_batches": 100,
                            "searcher_metric_value": metric_of(i, j),
                            "start_time": T0,
                        }
                    )
            for chunk in range(0, len(exps), 2000):
                await s.execute(insert(Experiment), exps[chunk : chunk + 2000])
            for chunk in range(0, len(tasks), 5000):
                await s.execute(insert(Task), tasks[chunk : chunk + 5000])
                await s.execute(insert(Trial), trials[chunk : chunk + 5000])
            if s.bind.dialect.name == "postgresql":
                # Ids were given explicitly: move the sequence past them for later API inserts.
                await s.execute(
                    text(
                        "SELECT setval(pg_get_serial_sequence('experiments', 'id'), max(id)) "
                        "FROM experiments"
                    )
                )
            exp_ids = [e["id"] for e in exps]
            trial_rows = (
                await s.execute(
                    select(
                        Trial.id, Trial.searcher_metric_value, Trial.experiment_id, Trial.hparams
                    ).where(Trial.experiment_id.in_(exp_ids))
                )
            ).all()
            pairs = [(tid, value) for tid, value, _, _ in trial_rows]
            # What the master writes beside each trial it creates (services.search._create).
            sampled = [
                {
                    "trial_id": tid,
                    "experiment_id": eid,
                    "name": v.name,
                    "number": v.number,
                    "text": v.text,
                }
                for tid, _, eid, hparams in trial_rows
                for v in flatten_hparams(hparams)
            ]
            for chunk in range(0, len(sampled), 5000):
                await s.execute(insert(TrialHparam), sampled[chunk : chunk + 5000])
            metrics = [
                {
                    "trial_id": tid,
                    "trial_run_id": 1,
                    "group": "validation",
                    "total_batches": 100,
                    "end_time": T0,
                    "metrics": {"avg_metrics": {"validation_loss": value}},
                    "archived": False,
                }
                for tid, value in pairs
            ]
            for chunk in range(0, len(metrics), 5000):
                await s.execute(insert(Metric), metrics[chunk : chunk + 5000])
            await _rollups(s, metrics)
        return Seeded(exp_ids, sorted(t for t, _ in pairs))
    finally:
        await engine.dispose()


async def _rollups(session: Any, metrics: list[dict]) -> None:
    """The rollups the master keeps with the reports, as its ingest would have written them."""
    reports: dict[tuple[int, str], list[tuple[int, dict]]] = {}
    for m in metrics:
        key = (m["trial_id"], m["group"])
        reports.setdefault(key, []).append((m["total_batches"], m["metrics"]["avg_metrics"]))
    out = []
    for (trial, group), items in reports.items():
        out.extend(metric_rollups.rows(trial, group, rollup(items)))
    for chunk in range(0, len(out), 5000):
        await session.execute(insert(MetricRollup), out[chunk : chunk + 5000])


async def seed_series(
    url: str, trial_id: int, *, steps: int, names: tuple[str, ...], spike_at: int, spike: float
) -> None:
    """`steps` training reports (steps 1..steps) of `names` on one trial; `names[0]` jumps to
    `spike` at `spike_at` only."""
    engine = make_engine(url)
    factory = make_sessionmaker(engine)
    try:
        async with transaction(factory) as s:
            rows = []
            for step in range(1, steps + 1):
                values = {n: 1.0 / (1 + step * (k + 1) / 1000) for k, n in enumerate(names)}
                if step == spike_at:
                    values[names[0]] = spike
                rows.append(
                    {
                        "trial_id": trial_id,
                        "trial_run_id": 1,
                        "group": "training",
                        "total_batches": step,
                        "end_time": T0 + timedelta(seconds=step),
                        "metrics": {"avg_metrics": values},
                        "archived": False,
                    }
                )
            for chunk in range(0, len(rows), 5000):
                await s.execute(insert(Metric), rows[chunk : chunk + 5000])
            await _rollups(s, rows)
    finally:
        await engine.dispose()
