"""Benchmark: one provisioner decision over 1,000 instances and 1,000 connected agents.

The issue's target: the scale decider over 1,000 instances within 10 ms. Two calls are timed,
each on two pools built from a fixed seed:

- ``decide_scaling`` alone, and ``plan_tick`` (decider + sticky launch error + pruning over 500
  pending requests + the human-readable decisions), the call the master's loop makes per tick;
- "within max": max_instances 2,000, so only stopped, long-disconnected and long-idle instances
  go; "over max": max_instances 600, so the over-maximum ordering runs too.

The instances mix every state (spot requests pending, starting, running busy, idle, long idle,
disconnected, long disconnected, stopped, stopping, terminating); the agents are those of the
connected instances plus strangers up to 1,000. Only the call is timed, not building its input.
Pure CPU: no database, no cloud. Run: ``python benchmarks/run.py --only provisioning [--quick]``
or ``python -m benchmarks.provisioning``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from provisioners.base import Instance, InstanceState
from provisioners.launch_errors import LaunchErrorSettings, LaunchErrorState
from provisioners.scale_decider import (
    DeciderMemory,
    DeciderSettings,
    ScalingSnapshot,
    decide_scaling,
)
from provisioners.tick import ProvisioningSettings, TickSnapshot, TickState, plan_tick

TARGET_MS = 10.0  # median of one decision over 1,000 instances, as the scheduling benchmark
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)

# (kind, share in %); a kind fixes the state, whether an agent is connected and the timers
MIX = (
    ("spot pending", 4),
    ("starting", 8),
    ("busy", 50),
    ("idle", 12),
    ("long idle", 6),
    ("disconnected", 5),
    ("long disconnected", 3),
    ("recently launched", 5),
    ("stopped", 3),
    ("stopping", 2),
    ("terminating", 2),
)
_STATES = {
    "spot pending": InstanceState.SPOT_REQUEST_PENDING,
    "starting": InstanceState.STARTING,
    "stopped": InstanceState.STOPPED,
    "stopping": InstanceState.STOPPING,
    "terminating": InstanceState.TERMINATING,
}
SCENARIOS = (("within max", 2_000), ("over max", 600))
CALLS = ("decide_scaling", "plan_tick")


def build_snapshot(
    instances: int = 1_000, agents: int = 1_000, *, max_instances: int = 2_000, seed: int = 0
) -> TickSnapshot:
    """A seeded pool: `instances` of every kind in MIX, `agents` connected agents in all."""
    rng = random.Random(seed)
    kinds = rng.choices([k for k, _ in MIX], weights=[w for _, w in MIX], k=instances)
    listed: list[Instance] = []
    connected: dict[str, bool] = {}
    idle_since: dict[str, datetime] = {}
    disconnected_since: dict[str, datetime] = {}
    for n, kind in enumerate(kinds):
        iid = f"i-{n:017x}"
        young = kind in ("starting", "recently launched", "spot pending")
        age = MINUTE * (rng.randint(1, 10) if young else rng.randint(30, 3_000))
        listed.append(Instance(iid, iid, _STATES.get(kind, InstanceState.RUNNING), NOW - age))
        if kind in ("busy", "idle", "long idle"):
            connected[iid] = kind != "busy"
        if kind in ("idle", "long idle"):
            idle_since[iid] = NOW - MINUTE * (rng.randint(21, 600) if kind == "long idle" else 5)
        elif kind in ("disconnected", "long disconnected"):
            minutes = rng.randint(11, 600) if kind == "long disconnected" else 2
            disconnected_since[iid] = NOW - MINUTE * minutes
    for n in range(max(0, agents - len(connected))):
        connected[f"stranger-{n}"] = rng.random() < 0.5
    rng.shuffle(listed)
    settings = ProvisioningSettings(
        decider=DeciderSettings(min_instances=10, max_instances=max_instances),
        launch_errors=LaunchErrorSettings(timeout=5 * MINUTE, retries=3),
        slots_per_instance=8,
    )
    # a visible launch error, so plan_tick also prunes
    errors = LaunchErrorState(failures=5, last_failure_at=NOW - MINUTE, message="capacity")
    return TickSnapshot(
        now=NOW,
        instances=listed,
        agents=connected,
        desired_new_instances=300,
        settings=settings,
        state=TickState(
            decider=DeciderMemory(idle_since=idle_since, disconnected_since=disconnected_since),
            launch_errors=errors,
        ),
        pending_slots={f"req-{n}": rng.choice((1, 2, 4, 8, 16, 64_000)) for n in range(500)},
    )


def scaling_snapshot(tick: TickSnapshot) -> ScalingSnapshot:
    return ScalingSnapshot(
        now=tick.now,
        instances=tick.instances,
        agents=tick.agents,
        desired_new_instances=tick.desired_new_instances,
        settings=tick.settings.decider,
        memory=tick.state.decider,
    )


@dataclass
class Timing:
    call: str
    scenario: str
    samples_ms: list[float]
    terminate: int
    launch: int

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p95_ms(self) -> float:
        ordered = sorted(self.samples_ms)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]

    @property
    def misses_target(self) -> bool:
        return self.median_ms > TARGET_MS


@dataclass
class ProvisioningResult:
    instances: int
    agents: int
    runs: int
    timings: list[Timing] = field(default_factory=list)
    load_before: float = 0.0
    load_after: float = 0.0

    def misses(self) -> list[str]:
        return [
            f"provisioning, {t.call} ({t.scenario}): median {t.median_ms:.2f} ms "
            f"(target ≤ {TARGET_MS:.0f} ms)"
            for t in self.timings
            if t.misses_target
        ]

    def table(self) -> tuple[str, list[str], list[list[str]], list[str]]:
        """(title, header, rows, notes) in the shape benchmarks/report.py prints."""
        title = (
            f"One provisioner decision — {self.instances:,} instances (mixed states), "
            f"{self.agents:,} connected agents; {self.runs} timed runs per row"
        )
        header = ["call", "pool", "median ms", "p95 ms", "terminate", "launch"]
        header.append(f"median ≤ {TARGET_MS:.0f} ms")
        rows = [
            [
                t.call,
                t.scenario,
                f"{t.median_ms:.2f}",
                f"{t.p95_ms:.2f}",
                str(t.terminate),
                str(t.launch),
                "MISSED" if t.misses_target else "met",
            ]
            for t in self.timings
        ]
        notes = [f"{name}: max_instances {cap:,}" for name, cap in SCENARIOS]
        notes.append(f"1-min load average {self.load_before} before / {self.load_after} after")
        return title, header, rows, notes

    def as_json(self) -> dict[str, Any]:
        return {
            "instances": self.instances,
            "agents": self.agents,
            "runs": self.runs,
            "load_before": self.load_before,
            "load_after": self.load_after,
            "target_ms": TARGET_MS,
            "timings": [
                {
                    "call": t.call,
                    "scenario": t.scenario,
                    "median_ms": t.median_ms,
                    "p95_ms": t.p95_ms,
                    "terminate": t.terminate,
                    "launch": t.launch,
                    "samples_ms": t.samples_ms,
                }
                for t in self.timings
            ],
            "target_misses": self.misses(),
        }


def _time(call: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    samples: list[float] = []
    result: Any = None
    call()  # warm caches and imports outside the timed runs
    for _ in range(runs):
        gc.collect()  # a collection left over from building the input is not the call's cost
        started = time.perf_counter()
        result = call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples, result


def run(
    instances: int = 1_000,
    agents: int = 1_000,
    runs: int = 200,
    say: Callable[[str], None] = print,
) -> ProvisioningResult:
    """Time both calls on both pools; the same seeded instances for all four rows."""
    result = ProvisioningResult(instances=instances, agents=agents, runs=runs)
    result.load_before = round(os.getloadavg()[0], 2)
    for scenario, cap in SCENARIOS:
        tick = build_snapshot(instances, agents, max_instances=cap)
        scaling = scaling_snapshot(tick)
        for call in CALLS:
            say(f"  {call} ({scenario}): {runs} runs …")
            if call == "decide_scaling":
                samples, plan = _time(lambda s=scaling: decide_scaling(s), runs)
            else:
                samples, plan = _time(lambda t=tick: plan_tick(t), runs)
            result.timings.append(Timing(call, scenario, samples, len(plan.terminate), plan.launch))
    result.load_after = round(os.getloadavg()[0], 2)
    return result


def print_table(table: tuple[str, list[str], list[list[str]], list[str]]) -> None:
    title, header, rows, notes = table
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    print(f"\n{title}")
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    for note in notes:
        print(f"  {note}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print the table and the verdict; returns the number of missed targets."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.provisioning")
    p.add_argument("--quick", action="store_true", help="30 runs per row instead of 200")
    p.add_argument("--runs", type=int, default=None, help="timed runs per row (200)")
    p.add_argument("--instances", type=int, default=1_000)
    p.add_argument("--agents", type=int, default=1_000)
    p.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = p.parse_args(argv)
    runs = args.runs if args.runs is not None else (30 if args.quick else 200)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    result = run(args.instances, args.agents, runs, say=say)
    print_table(result.table())
    misses = result.misses()
    print()
    print("Targets: all met." if not misses else "Targets missed:\n  " + "\n  ".join(misses))
    if args.json:
        args.json.write_text(json.dumps(result.as_json(), indent=2))
    return len(misses)


if __name__ == "__main__":
    sys.exit(main())
