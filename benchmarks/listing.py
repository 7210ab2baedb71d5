"""Benchmark 2: GET /api/v1/experiments latency with 10,000 experiments and 100,000 trials.

The master creates its schema (Alembic) and one real experiment through the API; that
experiment's expanded `config` and YAML are the template for every bulk-loaded row. Experiments,
their trials and one task row per trial are COPYed straight into the master's tables, then
ANALYZEd (what autovacuum would do soon after such a load). One client then sends sequential
requests after a warm-up; latency is measured at the client, full response body included.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from benchmarks import loadgen, pg, servers

# A realistic experiment: what a user writes; the master expands it (defaults filled in).
EXPERIMENT_YAML = """\
name: mnist-cnn-sweep
description: CNN on MNIST, random search over the optimizer
labels: [vision, sweep]
entrypoint: python3 -m determined.launch.torch_distributed python3 train.py
hyperparameters:
  global_batch_size: 64
  learning_rate: {type: log, base: 10, minval: -4, maxval: -1}
  weight_decay: {type: log, base: 10, minval: -6, maxval: -2}
  dropout1: {type: double, minval: 0.1, maxval: 0.5}
  dropout2: {type: double, minval: 0.1, maxval: 0.5}
  n_filters1: {type: int, minval: 16, maxval: 64}
  n_filters2: {type: int, minval: 32, maxval: 128}
  optimizer: {type: categorical, vals: [adam, sgd, adamw]}
searcher:
  name: random
  metric: validation_loss
  smaller_is_better: true
  max_trials: 10
  max_concurrent_trials: 10
  max_length: {epochs: 10}
resources:
  slots_per_trial: 1
min_validation_period: {epochs: 1}
max_restarts: 3
"""

STATES = [("COMPLETED", 0.80), ("CANCELED", 0.10), ("ERROR", 0.05), ("ACTIVE", 0.05)]
LABELS = ["vision", "nlp", "sweep", "baseline", "ablation", "prod"]


@dataclass
class Latency:
    form: str
    path: str
    requests: int
    page_items: int
    total: int
    response_kib: float
    samples_ms: list[float] = field(default_factory=list)

    def pct(self, q: float) -> float:
        return loadgen.percentile(self.samples_ms, q)

    @property
    def mean_ms(self) -> float:
        return sum(self.samples_ms) / len(self.samples_ms)


@dataclass
class ListingResult:
    experiments: int
    trials: int
    populate_s: float
    forms: list[Latency]


def _hparams(rng: random.Random) -> dict[str, object]:
    return {
        "global_batch_size": 64,
        "learning_rate": 10 ** rng.uniform(-4, -1),
        "weight_decay": 10 ** rng.uniform(-6, -2),
        "dropout1": rng.uniform(0.1, 0.5),
        "dropout2": rng.uniform(0.1, 0.5),
        "n_filters1": rng.randint(16, 64),
        "n_filters2": rng.randint(32, 128),
        "optimizer": rng.choice(["adam", "sgd", "adamw"]),
    }


async def populate(
    database: str, template: dict, original: str, experiments: int, trials_per: int
) -> tuple[int, int]:
    """COPY `experiments` experiments (ids after the real one) with `trials_per` trials each."""
    rng = random.Random(42)
    async with pg.connect(database) as conn:
        owners = [r["id"] for r in await conn.fetch("SELECT id FROM users ORDER BY id")]
        first_exp = int(await conn.fetchval("SELECT coalesce(max(id), 0) FROM experiments")) + 1
        first_trial = int(await conn.fetchval("SELECT coalesce(max(id), 0) FROM trials")) + 1
        base_time = datetime.now(UTC) - timedelta(days=365)
        exp_rows, task_rows, trial_rows = [], [], []
        trial_id = first_trial
        for n in range(experiments):
            exp_id = first_exp + n
            name = f"{template['name']}-{exp_id}"
            config = dict(template, name=name)
            labels = rng.sample(LABELS, rng.randint(0, 3))
            config["labels"] = labels
            state = rng.choices([s for s, _ in STATES], [w for _, w in STATES])[0]
            start = base_time + timedelta(minutes=50 * n)
            end = None if state == "ACTIVE" else start + timedelta(minutes=rng.randint(5, 600))
            job_id = str(uuid.uuid4())
            owner = owners[n % len(owners)]
            exp_rows.append(
                (
                    exp_id, 1, owner, name, str(config.get("description") or ""), "",
                    json.dumps(labels), state, json.dumps(config),
                    original.replace(template["name"], name, 1),
                    str(config["searcher"]["name"]), "", False, None, job_id,
                    1.0 if state == "COMPLETED" else rng.random(), start, end,
                )
            )  # fmt: skip
            for _ in range(trials_per):
                request_id = str(uuid.uuid4())
                task_id = f"{exp_id}.{request_id}"
                task_rows.append((task_id, "TRIAL", job_id, owner, start, end))
                trial_rows.append(
                    (
                        trial_id, exp_id, task_id, request_id, state,
                        json.dumps(_hparams(rng)), rng.randint(0, 2**31 - 1), 0, 1,
                        rng.randint(1000, 100_000), "", None,
                        1.0 if state == "COMPLETED" else rng.random(), rng.uniform(0.01, 2.5),
                        start, end,
                    )
                )  # fmt: skip
                trial_id += 1
        async with conn.transaction():
            await conn.copy_records_to_table(
                "experiments",
                records=exp_rows,
                columns=[
                    "id", "project_id", "owner_id", "name", "description", "notes", "labels",
                    "state", "config", "original_config", "searcher_type", "resource_pool",
                    "archived", "parent_id", "job_id", "progress", "start_time", "end_time",
                ],
            )  # fmt: skip
            await conn.copy_records_to_table(
                "tasks",
                records=task_rows,
                columns=["task_id", "task_type", "job_id", "owner_id", "start_time", "end_time"],
            )
            await conn.copy_records_to_table(
                "trials",
                records=trial_rows,
                columns=[
                    "id", "experiment_id", "task_id", "request_id", "state", "hparams", "seed",
                    "restarts", "run_id", "total_batches", "runner_state", "early_exit_reason",
                    "progress", "searcher_metric_value", "start_time", "end_time",
                ],
            )  # fmt: skip
            # Later inserts through the master must not collide with the ids we chose.
            for table in ("experiments", "trials"):
                await conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) FROM {table}"
                )
        await conn.execute("ANALYZE")
        n_exp = int(await conn.fetchval("SELECT count(*) FROM experiments"))
        n_trials = int(await conn.fetchval("SELECT count(*) FROM trials"))
    return n_exp, n_trials


async def measure(
    url: str, token: str, form: str, path: str, *, requests: int, warmup: int
) -> Latency:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        first = await client.get(path)
        first.raise_for_status()
        body = first.json()
        result = Latency(
            form=form,
            path=path,
            requests=requests,
            page_items=len(body["experiments"]),
            total=int(body["pagination"]["total"]),
            response_kib=len(first.content) / 1024,
        )
        for _ in range(warmup):
            (await client.get(path)).raise_for_status()
        for _ in range(requests):
            t0 = time.perf_counter()
            r = await client.get(path)
            elapsed = (time.perf_counter() - t0) * 1000
            r.raise_for_status()
            result.samples_ms.append(elapsed)
    return result


FORMS = [
    ("default page (100, by id)", "/api/v1/experiments"),
    ("`det experiment list` (200)", "/api/v1/experiments?limit=200&offset=0"),
]


async def run(
    database: str,
    workdir: Path,
    *,
    experiments: int,
    trials_per_experiment: int,
    requests: int,
    warmup: int,
    say=print,  # type: ignore[no-untyped-def]
) -> ListingResult:
    master = servers.master(database, workdir / "listing-master")
    master.start()
    try:
        await master.wait_ready()
        url = servers.base_url(master)
        token = await servers.login(url)
        sample = await servers.create_experiment(url, token, EXPERIMENT_YAML)
        exp = sample["experiment"]
        t0 = time.perf_counter()
        n_exp, n_trials = await populate(
            database, exp["config"], exp["originalConfig"], experiments, trials_per_experiment
        )
        populate_s = time.perf_counter() - t0
        say(f"  loaded {n_exp:,} experiments and {n_trials:,} trials in {populate_s:.1f}s")
        forms = []
        for form, path in FORMS:
            forms.append(await measure(url, token, form, path, requests=requests, warmup=warmup))
        return ListingResult(n_exp, n_trials, populate_s, forms)
    finally:
        master.stop()
