"""Benchmark: a simulated day of 16-GPU gangs on a pool whose GPUs run out, three strategies.

The recorded day (benchmarks/capacity_trace.py, benchmarks/data/capacity_day.json) is replayed
through the real pure offer planner (`provisioners.offer_plan.plan_offers`) and the real cold
marks (`provisioners.offers.record_capacity_error`) for three ways of finding capacity:

- ours: every offer (3 instance types x 3 zones, spot, and on-demand after 10 minutes of
  waiting), ranked by the planner (cheapest fitting first), failover to the next offer within
  the tick, a refused offer cold for a backoff that doubles;
- one type, one zone (Determined's pool): g5.12xlarge spot in us-east-1a only, tried every tick;
- fixed-order failover (SkyPilot's `ordered` resources): the same offers in the config's order,
  on-demand listed last and tried without waiting, every offer tried again at each attempt (a
  zone is skipped only within the attempt that found it out of capacity).

Every strategy sees the same trace: gangs arriving, market stockouts (a launch there fails) and
spot reclaims (a market's spot instances are taken back; the gang waits again, and its wait to
capacity is another sample). Times: a provisioner tick every 30 s, a refused launch costs 20 s
before the next attempt, an instance boots in 180 s. Time to capacity is from the gang's wait
starting to its last instance booted; cost is price x hours from launch to release, prices
from provisioners/data/prices.json. Pure CPU, deterministic.

Targets (issue 43): ours' p95 time to capacity at most half of one-type-one-zone's, ours' cost
no higher than fixed-order's. Run: `python benchmarks/run.py --only capacity` or
`python -m benchmarks.capacity_day [--regenerate]`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.capacity_trace import (
    DAY_S,
    TRACE_PATH,
    TYPES,
    ZONES,
    Trace,
    load_trace,
    make_trace,
    write_trace,
)
from provisioners.offer_plan import LaunchChoice, OfferDemand, OfferSnapshot, plan_offers
from provisioners.offers import (
    Offer,
    OfferSettings,
    OfferState,
    record_capacity_error,
    record_offer_success,
)
from provisioners.prices import aws_price

TICK_S, ATTEMPT_S, BOOT_S = 30.0, 20.0, 180.0
HORIZON_S = 3 * DAY_S  # the day's last gangs finish; a gang still waiting then is censored
EPOCH = datetime(2026, 12, 7, tzinfo=UTC)


@dataclass(frozen=True)
class Strategy:
    name: str
    offers: tuple[Offer, ...]
    settings: OfferSettings
    remember_cold: bool  # cold marks kept across attempts (ours)
    fixed_order: bool  # try in config order, not the planner's ranking
    tries_per_tick: int


def all_offers(*, fallback_waits: bool) -> tuple[Offer, ...]:
    """Each type x zone on spot, then each on on-demand (a fallback that waits, for ours)."""
    offers: list[Offer] = []
    for spot in (True, False):
        for instance_type, slots in TYPES:
            price = aws_price(instance_type)
            assert price is not None, instance_type
            for zone in ZONES:
                offers.append(
                    Offer(
                        instance_type,
                        zone,
                        slots,
                        spot=spot,
                        price_per_hour=price.of(spot=spot),
                        rank=len(offers),
                        fallback=not spot and fallback_waits,
                    )
                )
    return tuple(offers)


def strategies() -> tuple[Strategy, ...]:
    ours = all_offers(fallback_waits=True)
    fixed = all_offers(fallback_waits=False)
    return (
        Strategy(
            "ours (ranked offers + failover + cold backoff)",
            ours,
            OfferSettings(on_demand_after=timedelta(minutes=10)),
            remember_cold=True,
            fixed_order=False,
            tries_per_tick=len(ours),
        ),
        Strategy(
            "one type, one zone (Determined)",
            (ours[0],),
            OfferSettings(),
            remember_cold=False,
            fixed_order=False,
            tries_per_tick=1,
        ),
        Strategy(
            "fixed-order failover (SkyPilot)",
            fixed,
            OfferSettings(),
            remember_cold=False,
            fixed_order=True,
            tries_per_tick=len(fixed),
        ),
    )


@dataclass
class _Gang:
    job: int
    offer: Offer
    count: int
    launched_s: float
    ready_s: float
    work_left_s: float


@dataclass
class StrategyResult:
    name: str
    waits_s: list[float] = field(default_factory=list)
    censored: int = 0
    cost: float = 0.0
    failed_attempts: int = 0
    launches: int = 0
    reclaimed: int = 0
    on_demand_launches: int = 0

    def percentile(self, q: float) -> float:
        """Nearest rank; censored waits count as longer than every finished one."""
        waits = sorted(self.waits_s) + [math.inf] * self.censored
        if not waits:
            return 0.0
        return waits[max(0, math.ceil(q * len(waits)) - 1)]


def simulate(trace: Trace, strategy: Strategy) -> StrategyResult:
    """Replay the day for one strategy; see the module docstring for the model."""
    result = StrategyResult(strategy.name)
    gang_gpus = int(trace.rates["gang_gpus"])
    unit = strategy.offers[0].slots
    arrivals = sorted(enumerate(trace.jobs), key=lambda ij: ij[1].at_s)
    waiting: list[tuple[int, float, float]] = []  # (job, waiting since, work left)
    running: list[_Gang] = []
    state = OfferState()
    t, next_arrival = 0.0, 0
    while t <= HORIZON_S:
        # reclaims and completions up to now, in time order within the tick
        for gang in list(running):
            spot_key = gang.offer.key if gang.offer.spot else None
            done_s = gang.ready_s + gang.work_left_s
            reclaim = spot_key is not None and trace.reclaimed_between(spot_key, t - TICK_S, t)
            if done_s <= t and not (reclaim and _reclaim_time(trace, spot_key, t) < done_s):
                result.cost += _cost(gang, done_s)
                running.remove(gang)
            elif reclaim:
                at = _reclaim_time(trace, spot_key, t)
                worked = max(0.0, at - gang.ready_s)
                result.cost += _cost(gang, at)
                result.reclaimed += 1
                running.remove(gang)
                waiting.append((gang.job, at, gang.work_left_s - worked))
        while next_arrival < len(arrivals) and arrivals[next_arrival][1].at_s <= t:
            job_id, job = arrivals[next_arrival]
            waiting.append((job_id, job.at_s, job.work_s))
            next_arrival += 1
        still: list[tuple[int, float, float]] = []
        for job_id, since, work in sorted(waiting, key=lambda w: w[1]):
            gang, state = _try_launch(trace, strategy, state, t, since, gang_gpus, unit, result)
            if gang is None:
                still.append((job_id, since, work))
                continue
            result.waits_s.append(gang.ready_s - since)
            running.append(replace(gang, job=job_id, work_left_s=work))
        waiting = still
        if next_arrival == len(arrivals) and not waiting and not running:
            break
        t += TICK_S
    result.censored = len(waiting)
    for gang in running:
        result.cost += _cost(gang, HORIZON_S)
    return result


def _reclaim_time(trace: Trace, key: str, t: float) -> float:
    return min(x for x in trace.reclaims[key] if t - TICK_S < x <= t)


def _cost(gang: _Gang, until_s: float) -> float:
    return gang.count * gang.offer.price_per_hour * max(0.0, until_s - gang.launched_s) / 3600


def _try_launch(
    trace: Trace,
    strategy: Strategy,
    state: OfferState,
    t: float,
    since: float,
    gang_gpus: int,
    unit: int,
    result: StrategyResult,
) -> tuple[_Gang | None, OfferState]:
    """One tick's attempts for one waiting gang: the planner's choices, tried in order."""
    now = EPOCH + timedelta(seconds=t)
    if not strategy.remember_cold:
        state = OfferState()
    state = replace(state, unmet_since=EPOCH + timedelta(seconds=since))
    attempt_s, tried = t, 0
    blocked: set[str] = set()  # refused within this tick (every strategy skips these)
    while tried < strategy.tries_per_tick:
        choices = _choices(strategy, state, now, gang_gpus, unit, blocked)
        if not choices:
            break
        choice = choices[0]
        tried += 1
        offer = choice.offer
        if trace.stocked_out(offer.key, attempt_s):
            result.failed_attempts += 1
            blocked.add(offer.key)
            at = EPOCH + timedelta(seconds=attempt_s)
            state = record_capacity_error(
                state, strategy.settings, offer.key, at, "InsufficientInstanceCapacity"
            )
            attempt_s += ATTEMPT_S
            continue
        result.launches += 1
        result.on_demand_launches += 0 if offer.spot else 1
        state = record_offer_success(state, offer.key)
        gang = _Gang(-1, offer, choice.count, attempt_s, attempt_s + BOOT_S, 0.0)
        return gang, state
    return None, state


def _choices(
    strategy: Strategy,
    state: OfferState,
    now: datetime,
    gang_gpus: int,
    unit: int,
    blocked: set[str],
) -> list[LaunchChoice]:
    plan = plan_offers(
        OfferSnapshot(
            now=now,
            offers=[o for o in strategy.offers if o.key not in blocked],
            demand=OfferDemand(
                instances=math.ceil(gang_gpus / unit), unit_slots=unit, largest_request=gang_gpus
            ),
            state=state,
            settings=strategy.settings,
        )
    )
    # a gang launches whole: choices that cover fewer GPUs are not tried
    choices = [c for c in plan.choices if c.covers_slots >= gang_gpus]
    if strategy.fixed_order:
        choices.sort(key=lambda c: c.offer.rank)
    return choices


@dataclass
class CapacityResult:
    jobs: int
    results: list[StrategyResult]

    def by_name(self, prefix: str) -> StrategyResult:
        return next(r for r in self.results if r.name.startswith(prefix))

    def misses(self) -> list[str]:
        ours, det, fixed = self.by_name("ours"), self.by_name("one type"), self.by_name("fixed")
        misses = []
        if not ours.percentile(0.95) <= det.percentile(0.95) / 2:
            misses.append(
                f"ours p95 {_minutes(ours.percentile(0.95))} is not at most half of "
                f"one-type-one-zone's {_minutes(det.percentile(0.95))}"
            )
        if not ours.cost <= fixed.cost + 1e-9:
            misses.append(f"ours cost ${ours.cost:,.2f} > fixed-order ${fixed.cost:,.2f}")
        return misses

    def table(self) -> tuple[str, list[str], list[list[str]], list[str]]:
        header = ["strategy", "waits", "p50", "p95", "never", "refused", "on-demand", "cost"]
        rows = [
            [
                r.name,
                str(len(r.waits_s) + r.censored),
                _minutes(r.percentile(0.5)),
                _minutes(r.percentile(0.95)),
                str(r.censored),
                str(r.failed_attempts),
                f"{r.on_demand_launches}/{r.launches}",
                f"${r.cost:,.2f}",
            ]
            for r in self.results
        ]
        title = (
            f"Capacity day: {self.jobs} gangs of 16 GPUs over 24 h, time to capacity and cost "
            "(same trace, real offer planner)"
        )
        notes = [
            "waits: each gang's wait, and again after each spot reclaim; never: still waiting "
            f"after {HORIZON_S / 3600:g} h (counted as longer than every other wait)",
            "refused: launch attempts the cloud answered with a capacity error (20 s each)",
            *(f"target missed: {m}" for m in self.misses()),
        ]
        if not self.misses():
            notes.append("targets met: ours p95 <= half of one-type-one-zone, cost <= fixed-order")
        return title, header, rows, notes

    def as_json(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "strategies": [
                {
                    "name": r.name,
                    "p50_s": r.percentile(0.5),
                    "p95_s": r.percentile(0.95),
                    "waits": len(r.waits_s),
                    "censored": r.censored,
                    "cost_usd": round(r.cost, 2),
                    "failed_attempts": r.failed_attempts,
                    "launches": r.launches,
                    "on_demand_launches": r.on_demand_launches,
                    "reclaimed": r.reclaimed,
                }
                for r in self.results
            ],
            "misses": self.misses(),
        }


def _minutes(seconds: float) -> str:
    return "never" if math.isinf(seconds) else f"{seconds / 60:.1f} min"


def run(trace: Trace) -> CapacityResult:
    return CapacityResult(len(trace.jobs), [simulate(trace, s) for s in strategies()])


def other_days(seeds: int) -> tuple[str, list[str], list[list[str]], list[str]]:
    """p95 and cost per strategy on days drawn with seeds 1..N: is the recorded day typical?"""
    rows = []
    met = 0
    for seed in range(1, seeds + 1):
        day = run(make_trace(seed))
        met += not day.misses()
        row = [str(seed), str(day.jobs)]
        for r in day.results:
            row += [_minutes(r.percentile(0.95)), f"${r.cost:,.0f}"]
        rows.append(row)
    header = ["seed", "gangs"]
    for short in ("ours", "Determined", "fixed-order"):
        header += [f"{short} p95", f"{short} cost"]
    title = f"Other days from the same rates ({seeds} seeds)"
    return title, header, rows, [f"both targets met on {met} of {seeds} days"]


def main(argv: Sequence[str] | None = None) -> int:
    """Replay the recorded day, print the table; returns the number of missed targets."""
    from benchmarks.provisioning import print_table

    p = argparse.ArgumentParser(prog="python -m benchmarks.capacity_day")
    p.add_argument("--trace", type=Path, default=TRACE_PATH, help="the recorded day (JSON)")
    p.add_argument(
        "--regenerate", action="store_true", help="draw the day again (default seed) and save it"
    )
    p.add_argument("--quick", action="store_true", help="the same run (it takes about a second)")
    p.add_argument("--json", type=Path, help="also write the results as JSON here")
    p.add_argument(
        "--seeds",
        type=int,
        default=0,
        help="also replay N other days drawn from the same rates (seeds 1..N), one row each",
    )
    args = p.parse_args(argv)
    if args.regenerate:
        write_trace(make_trace(), args.trace)
    result = run(load_trace(args.trace))
    print_table(result.table())
    if args.seeds:
        print_table(other_days(args.seeds))
    if args.json:
        args.json.write_text(json.dumps(result.as_json(), indent=2))
    return len(result.misses())


if __name__ == "__main__":
    sys.exit(main())
