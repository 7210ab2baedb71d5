"""The recorded day that benchmarks/capacity_day.py replays: demand, stockouts, spot reclaims.

`make_trace(seed)` draws one day from the rates below and `benchmarks/data/capacity_day.json`
holds the day drawn with the default seed (regenerate: `python -m benchmarks.capacity_day
--regenerate`). The rates are stated assumptions, not measurements of any cloud: GPU spot
markets of one type in one zone run dry a few times a day for an hour or two (what the issue's
Determined users reported as a pool stalled by a spot shortage), on-demand capacity less often
and shorter, and a spot market reclaims its instances a couple of times a day (AWS's Spot
Instance Advisor puts GPU families in its ">20 %" interruption band, per month, per instance).

A stockout is per market (instance type x zone x spot/on-demand): every launch there fails
with a capacity error while it lasts. A reclaim takes back every spot instance of its market.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRACE_PATH = Path(__file__).parent / "data" / "capacity_day.json"
DAY_S = 24 * 3600

TYPES = (("g5.12xlarge", 4), ("g5.48xlarge", 8), ("p3.8xlarge", 4))
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
RATES: dict[str, Any] = {
    "gang_gpus": 16,
    "arrivals_per_hour": 1.0,
    "work_hours": [1.0, 4.0],
    "spot_stockouts_per_day": 4.0,
    "spot_stockout_mean_minutes": 120.0,
    "on_demand_stockouts_per_day": 1.0,
    "on_demand_stockout_mean_minutes": 60.0,
    "spot_reclaims_per_day": 2.0,
}


@dataclass(frozen=True)
class Job:
    """A 16-GPU gang that arrives at `at_s` and needs `work_s` seconds of all its GPUs."""

    at_s: float
    work_s: float


@dataclass(frozen=True)
class Trace:
    jobs: tuple[Job, ...]
    # market key (type@zone/market) -> [start_s, end_s) intervals in which launches fail
    stockouts: dict[str, tuple[tuple[float, float], ...]]
    # spot market key -> times its instances are reclaimed
    reclaims: dict[str, tuple[float, ...]]
    rates: dict[str, Any]

    def stocked_out(self, key: str, at_s: float) -> bool:
        return any(start <= at_s < end for start, end in self.stockouts.get(key, ()))

    def reclaimed_between(self, key: str, after_s: float, until_s: float) -> bool:
        return any(after_s < t <= until_s for t in self.reclaims.get(key, ()))


def market_key(instance_type: str, zone: str, *, spot: bool) -> str:
    """The same text as provisioners.offers.offer_key, so offers look their market up."""
    return f"{instance_type}@{zone}/{'spot' if spot else 'on-demand'}"


def make_trace(seed: int = 20261207, rates: dict[str, Any] | None = None) -> Trace:
    rates = dict(RATES if rates is None else rates)
    rng = random.Random(seed)
    jobs: list[Job] = []
    t = rng.expovariate(rates["arrivals_per_hour"] / 3600)
    low, high = rates["work_hours"]
    while t < DAY_S:
        jobs.append(Job(round(t, 1), round(rng.uniform(low, high) * 3600, 1)))
        t += rng.expovariate(rates["arrivals_per_hour"] / 3600)
    stockouts: dict[str, tuple[tuple[float, float], ...]] = {}
    reclaims: dict[str, tuple[float, ...]] = {}
    for instance_type, _ in TYPES:
        for zone in ZONES:
            for spot in (True, False):
                market = "spot" if spot else "on_demand"
                per_day = rates[f"{market}_stockouts_per_day"]
                mean_s = rates[f"{market}_stockout_mean_minutes"] * 60
                key = market_key(instance_type, zone, spot=spot)
                stockouts[key] = tuple(_episodes(rng, per_day, mean_s))
                if spot:
                    reclaims[key] = tuple(_events(rng, rates["spot_reclaims_per_day"]))
    return Trace(tuple(jobs), stockouts, reclaims, rates)


def _events(rng: random.Random, per_day: float) -> list[float]:
    out, t = [], rng.expovariate(per_day / DAY_S)
    while t < DAY_S:
        out.append(round(t, 1))
        t += rng.expovariate(per_day / DAY_S)
    return out


def _episodes(rng: random.Random, per_day: float, mean_s: float) -> list[tuple[float, float]]:
    return [(t, round(t + rng.expovariate(1 / mean_s), 1)) for t in _events(rng, per_day)]


def trace_to_json(trace: Trace) -> dict[str, Any]:
    return {
        "_about": __doc__.strip().splitlines()[0] + " See benchmarks/capacity_trace.py.",
        "rates": trace.rates,
        "jobs": [[j.at_s, j.work_s] for j in trace.jobs],
        "stockouts": {k: [list(i) for i in v] for k, v in trace.stockouts.items()},
        "reclaims": {k: list(v) for k, v in trace.reclaims.items()},
    }


def trace_from_json(data: dict[str, Any]) -> Trace:
    return Trace(
        jobs=tuple(Job(float(a), float(w)) for a, w in data["jobs"]),
        stockouts={
            k: tuple((float(s), float(e)) for s, e in v) for k, v in data["stockouts"].items()
        },
        reclaims={k: tuple(float(t) for t in v) for k, v in data["reclaims"].items()},
        rates=dict(data["rates"]),
    )


def load_trace(path: Path = TRACE_PATH) -> Trace:
    return trace_from_json(json.loads(path.read_text("utf-8")))


def write_trace(trace: Trace, path: Path = TRACE_PATH) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trace_to_json(trace), indent=1) + "\n", "utf-8")
