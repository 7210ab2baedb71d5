"""The printed tables (rich when available and wanted, plain text otherwise) and the JSON form."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from benchmarks.copy_floor import CopyResult
from benchmarks.ingest import IngestResult
from benchmarks.lifecycle import LifecycleResult
from benchmarks.listing import ListingResult
from benchmarks.scheduling import (
    SCHEDULERS,
    TARGET_MS,
    TARGET_PENDING,
    TARGETED,
    SchedulingResult,
)

MLFLOW_TARGET = 10.0  # Resolute must ingest at least 10x MLflow's rate
LISTING_P95_TARGET_MS = 50.0


@dataclass
class Results:
    settings: dict[str, Any]
    resolute: IngestResult | None = None
    mlflow: IngestResult | None = None
    copies: list[CopyResult] = field(default_factory=list)
    listing: ListingResult | None = None
    scheduling: SchedulingResult | None = None
    lifecycle: LifecycleResult | None = None
    phase_s: dict[str, float] = field(default_factory=dict)

    def mlflow_ratio(self) -> float | None:
        if not (self.resolute and self.mlflow and self.mlflow.available):
            return None
        if not self.mlflow.values_per_s:
            return None
        return self.resolute.values_per_s / self.mlflow.values_per_s

    def misses(self) -> list[str]:
        out = []
        ratio = self.mlflow_ratio()
        if ratio is not None and ratio < MLFLOW_TARGET:
            out.append(f"ingestion is {ratio:.1f}x MLflow (target ≥ {MLFLOW_TARGET:.0f}x)")
        for r in (self.resolute, self.mlflow):
            if r and r.available and not r.verified:
                out.append(f"{r.system}: stored values do not match acknowledged requests")
        if self.listing:
            for form in self.listing.forms:
                if form.pct(95) > LISTING_P95_TARGET_MS:
                    out.append(
                        f"GET {form.path}: p95 {form.pct(95):.1f} ms "
                        f"(target ≤ {LISTING_P95_TARGET_MS:.0f} ms)"
                    )
        if self.scheduling:
            for t in self.scheduling.timings:
                if t.misses_target:
                    out.append(
                        f"scheduling, {t.scheduler}: median {t.median_ms:.1f} ms at "
                        f"{t.pending:,} pending (target ≤ {TARGET_MS:.0f} ms)"
                    )
        if self.lifecycle:
            out += self.lifecycle.misses()
        return out

    def as_json(self) -> dict[str, Any]:
        def ingest(r: IngestResult | None) -> dict[str, Any] | None:
            if r is None:
                return None
            return {
                "system": r.system,
                "available": r.available,
                "note": r.note,
                "values_per_s": r.values_per_s,
                "stored_values": r.stored_values,
                "stored_rows": r.stored_rows,
                "requests_acked": r.requests_acked,
                "requests_failed": r.requests_failed,
                "elapsed_s": r.elapsed_s,
                "latency_p50_ms": r.latency_p50_ms,
                "latency_p95_ms": r.latency_p95_ms,
                "verified": r.verified if r.available else None,
                "errors": r.errors,
            }

        listing = None
        if self.listing:
            listing = {
                "experiments": self.listing.experiments,
                "trials": self.listing.trials,
                "forms": [
                    {
                        "form": f.form,
                        "path": f.path,
                        "requests": len(f.samples_ms),
                        "items": f.page_items,
                        "response_kib": f.response_kib,
                        "p50_ms": f.pct(50),
                        "p95_ms": f.pct(95),
                        "p99_ms": f.pct(99),
                        "mean_ms": f.mean_ms,
                    }
                    for f in self.listing.forms
                ],
            }
        return {
            "settings": self.settings,
            "ingest": {
                "resolute": ingest(self.resolute),
                "mlflow": ingest(self.mlflow),
                "resolute_over_mlflow": self.mlflow_ratio(),
                "copy": [
                    {
                        "shape": c.shape,
                        "values_per_s": c.values_per_s,
                        "rows": c.rows,
                        "copy_s": c.copy_s,
                        "resolute_fraction": self._fraction(c),
                    }
                    for c in self.copies
                ],
            },
            "listing": listing,
            "scheduling": _scheduling_json(self.scheduling),
            "lifecycle": self.lifecycle.as_json() if self.lifecycle else None,
            "target_misses": self.misses(),
            "phase_s": self.phase_s,
        }

    def _fraction(self, c: CopyResult) -> float | None:
        if not self.resolute or not c.values_per_s:
            return None
        return self.resolute.values_per_s / c.values_per_s


def _scheduling_json(r: SchedulingResult | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "agents": r.agents,
        "slots": r.slots,
        "used_slots": r.used_slots,
        "running": r.running,
        "skipped_sizes": r.skipped,
        "passes": [
            {
                "scheduler": t.scheduler,
                "pending": t.pending,
                "repetitions": len(t.samples_ms),
                "median_ms": t.median_ms,
                "p95_ms": t.p95_ms,
                "samples_ms": t.samples_ms,
                "starts": t.starts,
                "preempts": t.preempts,
                "waiting": t.waiting,
            }
            for t in r.timings
        ],
    }


def _scheduling_table(r: SchedulingResult) -> tuple[str, list[str], list[list[str]], list[str]]:
    sizes = r.sizes()
    header = ["scheduler", *(f"N = {n:,}: median / p95 ms" for n in sizes)]
    header += ["growth per 10× N", f"median ≤ {TARGET_MS:.0f} ms at {TARGET_PENDING:,}"]
    rows = []
    for name, _ in SCHEDULERS:
        cells, medians = [], []
        for n in sizes:
            t = r.timing(name, n)
            cells.append(f"{t.median_ms:,.1f} / {t.p95_ms:,.1f}" if t else "—")
            medians.append(t.median_ms if t else None)
        growth = [f"×{b / a:.1f}" for a, b in itertools.pairwise(medians) if a and b]
        target = r.timing(name, TARGET_PENDING)
        verdict = "—"
        if name in TARGETED and target is not None:
            verdict = "MISSED" if target.misses_target else "met"
        rows.append([name, *cells, ", ".join(growth) or "—", verdict])
    reps = ", ".join(
        f"{len(next(t for t in r.timings if t.pending == n).samples_ms)} at N = {n:,}"
        for n in sizes
    )
    notes = [f"passes per point: {reps}" if sizes else "nothing measured"]
    for n in sizes:
        plans = "; ".join(
            f"{t.scheduler}: {t.starts:,} start / {t.preempts:,} preempt / {t.waiting:,} wait"
            for name, _ in SCHEDULERS
            if (t := r.timing(name, n))
        )
        notes.append(f"N = {n:,}: {plans}")
    if r.skipped:
        notes.append(f"skipped (time limit): N = {', '.join(f'{n:,}' for n in r.skipped)}")
    title = (
        f"One scheduling pass — {r.agents:,} agents of 1/4/8 slots ({r.slots:,} slots, "
        f"{r.used_slots:,} held by {r.running:,} running allocations), N pending requests; "
        "only schedule(snapshot) is timed"
    )
    return title, header, rows, notes


def _n(value: float) -> str:
    return f"{value:,.0f}"


def _tables(res: Results) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """(title, header, rows, footnotes) for each table."""
    s = res.settings
    tables = []
    if res.resolute or res.mlflow or res.copies:
        rows = []
        for r in (res.resolute, res.mlflow):
            if r is None:
                continue
            if not r.available:
                rows.append([r.system, "unavailable", "—", "—", "—", "—", r.note])
                continue
            check = "yes" if r.verified else "NO"
            failed = f", {r.requests_failed} failed" if r.requests_failed else ""
            rows.append(
                [
                    r.system,
                    _n(r.values_per_s),
                    f"{r.requests_acked / r.elapsed_s:,.1f}" if r.elapsed_s else "—",
                    f"{r.latency_p50_ms:,.0f} / {r.latency_p95_ms:,.0f}",
                    f"{r.stored_values:,} / {r.stored_rows:,}",
                    f"{check} ({r.requests_acked:,} acked{failed})",
                    r.note,
                ]
            )
        for c in res.copies:
            frac = res._fraction(c)
            rows.append(
                [
                    f"PostgreSQL COPY, {c.shape}",
                    _n(c.values_per_s),
                    "—",
                    "—",
                    f"{c.values:,} / {c.rows:,}",
                    "yes (counted)",
                    f"Resolute = {frac:.1%} of this" if frac is not None else "",
                ]
            )
        notes = []
        ratio = res.mlflow_ratio()
        if ratio is not None:
            verdict = "met" if ratio >= MLFLOW_TARGET else "MISSED"
            notes.append(
                f"Resolute / MLflow = {ratio:.1f}x (target ≥ {MLFLOW_TARGET:.0f}x: {verdict})"
            )
        elif res.mlflow is not None:
            notes.append("Resolute / MLflow: n/a (MLflow unavailable)")
        for c in res.copies:
            frac = res._fraction(c)
            if frac is not None:
                notes.append(f"Resolute / COPY ({c.shape}) = {frac:.1%}")
        title = (
            f"Metric ingestion into PostgreSQL — {s['clients']} clients, {s['ingest_s']:.0f} s "
            f"timed after {s['warmup_s']:.0f} s warm-up, 1,000 values per request; "
            "values/s = values found in the DB / timed window"
        )
        header = ["system", "values/s", "req/s", "p50/p95 ms", "stored values / rows", "verified"]
        header.append("notes")
        tables.append((title, header, rows, notes))
    if res.listing:
        rows = []
        for f in res.listing.forms:
            p95 = f.pct(95)
            rows.append(
                [
                    f"GET {f.path}",
                    f.form,
                    f"{f.page_items} of {f.total:,}",
                    f"{f.response_kib:,.0f}",
                    f"{f.pct(50):.1f}",
                    f"{p95:.1f}",
                    f"{f.pct(99):.1f}",
                    f"{f.mean_ms:.1f}",
                    "met" if p95 <= LISTING_P95_TARGET_MS else "MISSED",
                ]
            )
        title = (
            f"GET /api/v1/experiments — {res.listing.experiments:,} experiments, "
            f"{res.listing.trials:,} trials; {s['listing_requests']} sequential requests per form "
            f"after {s['listing_warmup']} warm-up, one client"
        )
        header = ["request", "form", "items", "KiB", "p50 ms", "p95 ms", "p99 ms", "mean ms"]
        header.append(f"p95 ≤ {LISTING_P95_TARGET_MS:.0f} ms")
        tables.append((title, header, rows, []))
    if res.scheduling:
        tables.append(_scheduling_table(res.scheduling))
    if res.lifecycle:
        tables += res.lifecycle.tables()
    return tables


def print_tables(res: Results, *, plain: bool = False) -> None:
    tables = _tables(res)
    if not plain:
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            plain = True
    if plain:
        for title, header, rows, notes in tables:
            widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
            print(f"\n{title}")
            line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
            print(line)
            print("-" * len(line))
            for row in rows:
                print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
            for note in notes:
                print(f"  {note}")
        return
    console = Console(width=max(Console().width, 160))
    for title, header, rows, notes in tables:
        table = Table(title=title, title_justify="left")
        for h in header:
            table.add_column(h, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print()
        console.print(table)
        for note in notes:
            console.print(f"  {note}")
