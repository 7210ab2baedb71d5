"""Benchmark 4, the life of a task on `det deploy local`: submit → first training step per
runtime (first_step.py), and trivial-task throughput against Slurm (task_throughput.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import first_step, task_throughput
from benchmarks.first_step import FirstStep, Interpreter
from benchmarks.task_throughput import ENGINE_TARGET, TARGET_RATIO, Throughput

Table = tuple[str, list[str], list[list[str]], list[str]]


@dataclass
class LifecycleResult:
    interpreters: list[Interpreter] = field(default_factory=list)
    first_steps: list[FirstStep] = field(default_factory=list)
    throughput: list[Throughput] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def _row(self, prefix: str) -> Throughput | None:
        return next((t for t in self.throughput if t.system.startswith(prefix)), None)

    @property
    def slurm(self) -> Throughput | None:
        return self._row("Slurm")

    @property
    def engine(self) -> Throughput | None:
        return self._row("Docker engine alone")

    @staticmethod
    def _over(t: Throughput, peer: Throughput | None) -> float | None:
        if peer is None or t is peer or not (t.available and peer.available):
            return None
        if not (t.per_s and peer.per_s):
            return None
        return t.per_s / peer.per_s

    def ratio(self, t: Throughput) -> float | None:
        """Resolute's rows against Slurm; the peers themselves get no verdict."""
        if not t.system.startswith("Resolute"):
            return None
        return self._over(t, self.slurm)

    def engine_ratio(self, t: Throughput) -> float | None:
        """The docker runtime against the Docker engine driven directly, its ceiling."""
        if not t.system.startswith("Resolute (docker"):
            return None
        return self._over(t, self.engine)

    def misses(self) -> list[str]:
        out = []
        for r in self.first_steps:
            if r.misses_target:
                out.append(
                    f"first step, {r.runtime} runtime: median {r.median_s:.2f} s "
                    f"(target ≤ {r.target_s:.2f} s = {r.target_note})"
                )
        for t in self.throughput:
            ratio = self.ratio(t)
            if ratio is not None and ratio < TARGET_RATIO:
                out.append(
                    f"task throughput, {t.system}: {ratio:.1f}x Slurm (target ≥ {TARGET_RATIO:g}x)"
                )
            share = self.engine_ratio(t)
            if share is not None and share < ENGINE_TARGET:
                out.append(
                    f"task throughput, {t.system}: {share:.0%} of the Docker engine alone "
                    f"(target ≥ {ENGINE_TARGET:.0%})"
                )
            if t.available and t.failed:
                out.append(f"task throughput, {t.system}: {t.failed} of {t.tasks} tasks failed")
        return out

    def tables(self) -> list[Table]:
        tables: list[Table] = []
        if self.first_steps or self.interpreters:
            rows = []
            for r in self.first_steps:
                if not r.available:
                    rows.append([f"{r.runtime} runtime", "unavailable", "—", "—", "—", "—", r.note])
                    continue
                med = r.median_s or 0.0
                running = (
                    f"{sorted(r.running_s)[len(r.running_s) // 2]:.2f}" if r.running_s else "—"
                )
                verdict = "MISSED" if r.misses_target else "met"
                overhead = r.overhead_s
                rows.append(
                    [
                        f"{r.runtime} runtime",
                        f"{med:.2f}",
                        f"{min(r.samples_s):.2f} / {max(r.samples_s):.2f}",
                        running,
                        f"{overhead:.2f}" if overhead is not None else "—",
                        f"≤ {r.target_s:.2f} ({r.target_note}): {verdict}",
                        ", ".join(f"{s:.2f}" for s in r.samples_s),
                    ]
                )
            for i in self.interpreters:
                spread = f"{min(i.samples_s):.2f} / {max(i.samples_s):.2f}"
                rows.append([i.label, f"{i.median_s:.2f}", spread, "—", "—", "(no platform)", ""])
            title = (
                "Submit → first training step on `det deploy local` (1 agent × 1 slot): POST "
                "/api/v1/experiments (examples/hello) until the master holds the first training "
                "metric; after one warm-up run"
            )
            header = ["what", "median s", "min / max s", "→ allocation RUNNING s"]
            header += ["beyond off-cluster s", "target"]
            header.append("samples s")
            tables.append((title, header, rows, []))
        if self.throughput:
            rows = []
            for t in self.throughput:
                if not t.available:
                    rows.append([t.system, "unavailable", "—", "—", "—", "—", "—", t.note])
                    continue
                ratio, share = self.ratio(t), self.engine_ratio(t)
                verdict = engine = "—"
                if ratio is not None:
                    verdict = f"{ratio:.1f}x: {'met' if ratio >= TARGET_RATIO else 'MISSED'}"
                if share is not None:
                    engine = f"{share:.0%}: {'met' if share >= ENGINE_TARGET else 'MISSED'}"
                rows.append(
                    [
                        t.system,
                        f"{t.per_s:.1f}",
                        f"{t.tasks:,} / {t.slots}",
                        f"{t.total_s:.1f}",
                        str(t.failed),
                        verdict,
                        engine,
                        t.note,
                    ]
                )
            title = (
                "Trivial task throughput: `true` as a command (Resolute: POST /api/v1/commands) "
                "or a batch job (Slurm: sbatch --wrap true); first submit → all ended"
            )
            header = ["system", "tasks/s", "tasks / slots", "total s", "failed"]
            header += [f"vs Slurm (≥ {TARGET_RATIO:g}x)", f"of engine (≥ {ENGINE_TARGET:.0%})"]
            header.append("notes")
            cpu = [t.cpu_note() for t in self.throughput if t.cpu_note()]
            if cpu:
                cpu.append(
                    "machine = every core's busy time over the batch, whoever spent it: beyond "
                    "the named processes, containerd-shim and runc per container, the kernel, "
                    "and other work on the machine (see the load average)"
                )
            tables.append((title, header, rows, [*self.skipped, *cpu]))
        return tables

    def as_json(self) -> dict[str, Any]:
        return {
            "interpreters": [
                {"label": i.label, "median_s": i.median_s, "samples_s": i.samples_s}
                for i in self.interpreters
            ],
            "first_step": [
                {
                    "runtime": r.runtime,
                    "available": r.available,
                    "note": r.note,
                    "median_s": r.median_s,
                    "samples_s": r.samples_s,
                    "running_s": r.running_s,
                    "target_s": r.target_s,
                    "off_cluster_s": r.floor_s,
                    "overhead_s": r.overhead_s,
                }
                for r in self.first_steps
            ],
            "throughput": [
                {
                    "system": t.system,
                    "available": t.available,
                    "note": t.note,
                    "tasks": t.tasks,
                    "slots": t.slots,
                    "submit_s": t.submit_s,
                    "total_s": t.total_s,
                    "tasks_per_s": t.per_s,
                    "failed": t.failed,
                    "cpu_ms_per_task": t.cpu_ms,
                    "vs_slurm": self.ratio(t),
                    "of_engine": self.engine_ratio(t),
                }
                for t in self.throughput
            ],
        }


async def run(
    workdir: Path,
    *,
    runs: int,
    tasks: int,
    runtimes: tuple[str, ...],
    say: Callable[[str], None],
    deadline: float,
    agents: int = 4,
    slots: int = 2,
    pairs: int = 1,
) -> LifecycleResult:
    res = LifecycleResult()
    say(f"  first step: {runs} runs per runtime ({', '.join(runtimes)}) …")
    res.interpreters, res.first_steps = await first_step.run(
        workdir, runs=runs, runtimes=runtimes, say=say
    )
    for runtime in runtimes:
        if runtime != "docker":
            t = await _ours(workdir, runtime, tasks, agents, slots, say, deadline)
            if t is None:
                res.skipped.append(f"Resolute ({runtime}) skipped: the run's time limit is near")
            else:
                res.throughput.append(t)
            continue
        # The engine runs before and after each run of ours, which counts against the mean of
        # the two: on a shared machine the load moves within minutes, and one engine run after
        # ours would credit or blame us for that move. With several pairs, the run of ours with
        # the median share is the row; the note lists every share.
        engines = [await _engine(tasks, agents * slots, say, workdir)]
        ours: list[Throughput] = []
        for _ in range(max(1, pairs)):
            t = await _ours(workdir, runtime, tasks, agents, slots, say, deadline)
            if t is None:
                break
            ours.append(t)
            engines.append(await _engine(tasks, agents * slots, say, workdir))
        if not ours:
            res.skipped.append(f"Resolute ({runtime}) skipped: the run's time limit is near")
            continue
        pick, shares = task_throughput.median_pair(ours, engines)
        row = ours[pick]
        if len(ours) > 1:
            rates = ", ".join(f"{e.per_s or 0:.1f}" for e in engines)
            row.note += (
                f"; the median of {len(ours)} runs interleaved with the engine's: "
                f"{', '.join(f'{s:.0%}' for s in shares)} of the engine (its runs: {rates}/s)"
            )
        res.throughput.append(row)
        res.throughput.append(task_throughput.bracketed(engines[pick], engines[pick + 1]))
    left = deadline - time.perf_counter()
    if left < 60:
        res.skipped.append("Slurm skipped: the run's time limit is near")
    else:
        try:
            peer = await asyncio.to_thread(
                task_throughput.slurm, workdir, tasks=tasks, slots=agents * slots, say=say,
                timeout_s=left - 30,
            )  # fmt: skip
        except Exception as exc:
            peer = Throughput("Slurm", tasks, agents * slots, False, f"failed: {str(exc)[:500]}")
        res.throughput.append(peer)
    return res


async def _ours(
    workdir: Path,
    runtime: str,
    tasks: int,
    agents: int,
    slots: int,
    say: Callable[[str], None],
    deadline: float,
) -> Throughput | None:
    left = deadline - time.perf_counter()
    if left < 60:
        return None
    try:
        return await task_throughput.resolute(
            workdir, runtime=runtime, tasks=tasks, agents=agents, slots=slots, say=say,
            timeout_s=left - 30,
        )  # fmt: skip
    except Exception as exc:  # keep the other rows
        say(f"  Resolute ({runtime}) failed: {exc}")
        return Throughput(f"Resolute ({runtime} runtime)", tasks, agents * slots, False,
                          f"failed: {str(exc)[:500]}")  # fmt: skip


async def _engine(tasks: int, slots: int, say: Callable[[str], None], workdir: Path) -> Throughput:
    try:
        return await asyncio.to_thread(task_throughput.docker_engine, tasks, slots, say, workdir)
    except Exception as exc:
        return Throughput("Docker engine alone", tasks, slots, False, f"failed: {str(exc)[:500]}")
