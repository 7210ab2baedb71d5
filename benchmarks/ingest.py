"""Benchmark 1a: metric ingestion through the master's REST endpoint into PostgreSQL.

16 trial clients POST /api/v1/trials/{id}/metrics (1,000 values per report, see payloads.py) for a
fixed time. The rate counts only what PostgreSQL holds afterwards: the values inside the `metrics`
rows written during the timed window, divided by the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks import loadgen, pg, servers
from benchmarks.payloads import BATCHES_PER_REPORT, VALUES_PER_REQUEST, ResoluteReports

EXPERIMENT_YAML = """\
name: bench-ingest
description: metric ingestion benchmark
entrypoint: python3 train.py
hyperparameters:
  global_batch_size: 64
  learning_rate: {type: log, base: 10, minval: -4, maxval: -1}
  hidden: {type: int, minval: 32, maxval: 512}
  dropout: {type: double, minval: 0.0, maxval: 0.5}
searcher:
  name: random
  metric: loss
  smaller_is_better: true
  max_trials: __TRIALS__
  max_concurrent_trials: __TRIALS__
  max_length: {batches: 100000}
"""


@dataclass
class IngestResult:
    system: str
    available: bool = True
    note: str = ""
    clients: int = 0
    elapsed_s: float = 0.0
    requests_acked: int = 0
    requests_failed: int = 0
    stored_rows: int = 0  # rows in the store's table written during the window
    stored_values: int = 0  # metric values in those rows
    latency_p50_ms: float = 0.0
    latency_p95_ms: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def values_per_s(self) -> float:
        return self.stored_values / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def verified(self) -> bool:
        """Every acknowledged request's values are in the database, and nothing else."""
        return self.stored_values == self.requests_acked * VALUES_PER_REQUEST

    def record(self, load: loadgen.LoadResult, rows: int, values: int) -> None:
        self.clients = load.clients
        self.elapsed_s = load.elapsed_s
        self.requests_acked = load.acked
        self.requests_failed = load.failed
        self.stored_rows = rows
        self.stored_values = values
        if load.latencies_ms:
            self.latency_p50_ms = loadgen.percentile(load.latencies_ms, 50)
            self.latency_p95_ms = loadgen.percentile(load.latencies_ms, 95)
        self.errors = load.errors


async def trial_ids(url: str, token: str, experiment_id: int) -> list[int]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        r = await client.get(
            f"/api/v1/experiments/{experiment_id}/trials",
            headers={"Authorization": f"Bearer {token}"},
        )
        r.raise_for_status()
        return [int(t["id"]) for t in r.json()["trials"]]


async def run(
    database: str, workdir: Path, *, clients: int, duration_s: float, warmup_s: float
) -> IngestResult:
    """Start the master on `database` (an empty one), load it, stop it; the DB stays for COPY."""
    result = IngestResult(system="Resolute (REST → PostgreSQL)")
    master = servers.master(database, workdir / "ingest-master")
    master.start()
    try:
        await master.wait_ready()
        url = servers.base_url(master)
        token = await servers.login(url)
        created = await servers.create_experiment(
            url, token, EXPERIMENT_YAML.replace("__TRIALS__", str(clients))
        )
        trials = await trial_ids(url, token, int(created["experiment"]["id"]))
        if len(trials) != clients:
            raise RuntimeError(f"expected {clients} trials, the experiment has {len(trials)}")
        reports = [ResoluteReports(t, seed=i) for i, t in enumerate(trials)]
        next_seq = [0] * clients  # steps keep growing across warm-up and the timed run

        async def send(http: httpx.AsyncClient, client: int, _seq: int) -> httpx.Response:
            next_seq[client] += 1
            return await http.post(
                f"/api/v1/trials/{trials[client]}/metrics",
                content=reports[client].body(next_seq[client]),
                headers={"Content-Type": "application/json"},
            )

        headers = {"Authorization": f"Bearer {token}"}
        if warmup_s > 0:
            await loadgen.closed_loop(url, clients, warmup_s, send, headers=headers)
        # Count only reports sent in the timed window: each trial's steps start past warm-up's.
        since = {t: (next_seq[c] + 1) * BATCHES_PER_REPORT for c, t in enumerate(trials)}
        load = await loadgen.closed_loop(url, clients, duration_s, send, headers=headers)
        rows, values = await pg.stored_metric_values(database, since)
        result.record(load, rows, values)
        result.note = "1 master process (no worker option)"
    finally:
        master.stop()
    return result
