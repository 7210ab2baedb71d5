"""Benchmark 1c: what PostgreSQL itself takes in through COPY, the ceiling for any REST service.

Two shapes, each loaded with asyncpg's copy_records_to_table (binary COPY) on one connection:

* reports — a table made `LIKE metrics INCLUDING ALL` (same columns, defaults, unique constraint
  and index as the master's `metrics` table), one row per 1,000-value report with its JSONB;
* values  — one row per metric value (trial_id, name, step, value) with a btree index on
  (trial_id, name, step), the minimum needed to read a series back.

Only the COPY calls are timed; building the records in Python happens between them.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from benchmarks import pg
from benchmarks.payloads import (
    BATCHES_PER_REPORT,
    METRIC_NAMES,
    VALUES_PER_REQUEST,
    now,
    report_json,
    report_metrics,
)

REPORTS_PER_COPY = 200  # 200,000 values per COPY call
TRIALS = 16


@dataclass
class CopyResult:
    shape: str
    rows: int
    values: int
    copy_s: float

    @property
    def values_per_s(self) -> float:
        return self.values / self.copy_s if self.copy_s else 0.0


async def copy_reports(database: str, duration_s: float) -> CopyResult:
    """One row per report, into a twin of the master's `metrics` table."""
    columns = [
        "trial_id", "trial_run_id", "group", "total_batches", "end_time", "metrics", "archived"
    ]  # fmt: skip
    payloads = [report_json(seed) for seed in range(TRIALS)]  # one per trial, as over REST
    async with pg.connect(database) as conn:
        await conn.execute("DROP TABLE IF EXISTS bench_copy_reports")
        await conn.execute("CREATE TABLE bench_copy_reports (LIKE metrics INCLUDING ALL)")
        copied, spent, step = 0, 0.0, 0
        while spent < duration_s:
            step += BATCHES_PER_REPORT
            at = now()
            records = []
            for i in range(REPORTS_PER_COPY):
                trial = i % TRIALS
                records.append(
                    (1 + trial, 1, "training", step + i // TRIALS, at, payloads[trial], False)
                )
            step += REPORTS_PER_COPY
            t0 = time.perf_counter()
            await conn.copy_records_to_table("bench_copy_reports", records=records, columns=columns)
            spent += time.perf_counter() - t0
            copied += len(records)
        stored = await conn.fetchval("SELECT count(*) FROM bench_copy_reports")
        await conn.execute("DROP TABLE bench_copy_reports")
    if stored != copied:
        raise RuntimeError(f"COPY stored {stored} report rows, expected {copied}")
    return CopyResult("one row per report (JSONB)", copied, copied * VALUES_PER_REQUEST, spent)


async def copy_values(database: str, duration_s: float) -> CopyResult:
    """One row per metric value."""
    rng = random.Random(7)
    async with pg.connect(database) as conn:
        await conn.execute("DROP TABLE IF EXISTS bench_copy_values")
        await conn.execute(
            "CREATE TABLE bench_copy_values (trial_id integer NOT NULL, name text NOT NULL,"
            " step bigint NOT NULL, value double precision NOT NULL)"
        )
        await conn.execute(
            "CREATE INDEX bench_copy_values_series ON bench_copy_values (trial_id, name, step)"
        )
        copied, spent, report = 0, 0.0, 0
        while spent < duration_s:
            records = []
            for _ in range(REPORTS_PER_COPY):
                report += 1
                trial, base = 1 + report % TRIALS, (report // TRIALS) * (BATCHES_PER_REPORT + 1)
                avg, batches = report_metrics(rng)
                for offset, block in enumerate([*batches, avg]):
                    for name in METRIC_NAMES:
                        records.append((trial, name, base + offset, block[name]))
            t0 = time.perf_counter()
            await conn.copy_records_to_table(
                "bench_copy_values", records=records, columns=["trial_id", "name", "step", "value"]
            )
            spent += time.perf_counter() - t0
            copied += len(records)
        stored = await conn.fetchval("SELECT count(*) FROM bench_copy_values")
        await conn.execute("DROP TABLE bench_copy_values")
    if stored != copied:
        raise RuntimeError(f"COPY stored {stored} value rows, expected {copied}")
    return CopyResult("one row per value", copied, copied, spent)
