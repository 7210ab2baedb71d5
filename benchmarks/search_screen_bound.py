"""The screening bound: the fewest epochs any search 4 trials wide could need to reach a target
on the digits task when it must find its configurations by training them.

    .venv/bin/python -m benchmarks.search_screen_bound [--seeds 1 2 3] [--target 0.92 0.935]
        [--cache curves.json]

The search-efficiency benchmark (benchmarks/search_efficiency.py) compares searchers with each
other, with floors that know the best configuration in advance, and with the screening bound of
their own proposals. This script applies the same bound (benchmarks/search_bounds.py: the i-th
configuration proposed cannot start before round 1 + i // slots, and the best of the stream is
taken as if the search had known each trial's whole future after its first epoch) to streams no
searcher of ours made: random draws and hypothetical models, so it says what any search that
starts knowing nothing could do with proposals of that quality.

Rows (median over the seeds, a stream that never gets there counted as 600 epochs, as in
search_efficiency):

- random search's own draws: each seed's 40 configurations, in the order random search (and
  the first trials of ASHA with random sampling) proposes them;
- proposals drawn at random from the pool of all seeds' draws (the space, 40 x seeds samples);
- a hypothetical model: the first STARTUP proposals at random, then a given share of the rest
  hopeless (first-epoch accuracy below HOPELESS), each other proposal a random one of the
  pool's configurations that are not. 70 % is random sampling's share (the pool's), 47 % and
  26 % are those of the ASHA model's proposals after the sixth and of its greediest variant
  (docs/benchmarks.md, 2026-11-26), 0 % is a model that never proposes a hopeless trial; the
  last row's proposes only trials at TOP_FIRST_EPOCH or more after one epoch.

Every configuration is trained once, from the start to the highest target or MAX_EPOCHS, four
at a time; `--cache` keeps the curves, so another run of other targets costs nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks.search_bounds import first_hit, screen_bound
from benchmarks.search_efficiency import BUDGET, WORKERS, _to_target, random_configs

STARTUP = 6
"""Random proposals before the hypothetical model's: the ASHA model's `min_points` (one more
than the searched hyperparameters)."""

HOPELESS = 0.5
"""A trial below this accuracy after its first epoch is hopeless: of random ones, 1 % ever
reach 0.92."""

HOPELESS_SHARES = (0.70, 0.47, 0.26, 0.0)

TOP_FIRST_EPOCH = 0.8
"""The last row's model proposes only trials this good after one epoch (a tenth of the space)."""

STREAM = 400
"""Proposals drawn per seed from the pool: more than any search of 40 trials could make in the
rounds that matter."""


def hypothetical_stream(
    pool: Sequence[Sequence[float]],
    share: float,
    rng: random.Random,
    length: int = STREAM,
    hopeful_from: float = HOPELESS,
) -> list[Sequence[float]]:
    """STARTUP curves drawn from the pool, then `share` hopeless ones and the rest from those
    at `hopeful_from` or more after one epoch."""
    hopeless = [curve for curve in pool if curve[0] < HOPELESS]
    hopeful = [curve for curve in pool if curve[0] >= hopeful_from]
    stream = [pool[rng.randrange(len(pool))] for _ in range(STARTUP)]
    while len(stream) < length:
        side = hopeless if rng.random() < share else hopeful
        stream.append(side[rng.randrange(len(side))])
    return stream


def _median(bounds: list[int | None]) -> str:
    reached = sum(bound is not None for bound in bounds)
    median = statistics.median(BUDGET if bound is None else bound for bound in bounds)
    return f"{median:g} ({reached}/{len(bounds)})"


def curves_for(seeds: list[int], target: float, cache: Path | None) -> dict[int, list[list[float]]]:
    """Every seed's random draws trained to `target` (from the cache where it has them)."""
    known: dict[int, list[list[float]]] = {}
    if cache is not None and cache.exists():
        saved = json.loads(cache.read_text())
        if saved.get("target", 0) >= target:
            known = {int(seed): curves for seed, curves in saved["curves"].items()}
    missing = [seed for seed in seeds if seed not in known]
    with ProcessPoolExecutor(WORKERS) as pool:
        for seed in missing:
            jobs = [(hparams, trial_seed, target) for hparams, trial_seed in random_configs(seed)]
            known[seed] = list(pool.map(_to_target, jobs))
            print(f"  seed {seed}: {len(jobs)} configurations trained", flush=True)
            if cache is not None:
                cache.write_text(json.dumps({"target": target, "curves": known}))
    return {seed: known[seed] for seed in seeds}


def rows(curves: dict[int, list[list[float]]], targets: list[float]) -> list[tuple[str, list[str]]]:
    """(label, a median cell per target) for every stream: each seed's stream is made once
    from that seed's curves and an rng seeded by it, then bounded at every target."""
    pool = [curve for seed_curves in curves.values() for curve in seed_curves]
    out: list[tuple[str, list[str]]] = []

    def drawn(make: Callable[[int, random.Random], Sequence[Sequence[float]]], label: str) -> None:
        streams = [make(seed, random.Random(seed)) for seed in curves]
        cells = [
            _median([screen_bound([first_hit(c, t) for c in stream]) for stream in streams])
            for t in targets
        ]
        out.append((label, cells))

    drawn(lambda seed, _: curves[seed], "random search's own draws, in its order")
    drawn(
        lambda _, rng: [pool[rng.randrange(len(pool))] for _ in range(STREAM)],
        "proposals at random from the pool",
    )
    for share in HOPELESS_SHARES:
        drawn(
            lambda _, rng, share=share: hypothetical_stream(pool, share, rng),
            f"first {STARTUP} at random, then {share:.0%} hopeless",
        )
    top = sum(curve[0] >= TOP_FIRST_EPOCH for curve in pool) / len(pool)
    drawn(
        lambda _, rng: hypothetical_stream(pool, 0.0, rng, hopeful_from=TOP_FIRST_EPOCH),
        f"first {STARTUP} at random, then only the {top:.0%} at {TOP_FIRST_EPOCH:g} or more"
        " after one epoch",
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--target", type=float, nargs="+", default=[0.92, 0.925, 0.93, 0.935])
    parser.add_argument("--cache", type=Path, help="keep the trained curves here (JSON)")
    args = parser.parse_args()
    targets = sorted(set(args.target))
    curves = curves_for(args.seeds, targets[-1], args.cache)
    pool = [curve for seed_curves in curves.values() for curve in seed_curves]
    hopeless = sum(curve[0] < HOPELESS for curve in pool) / len(pool)
    print(
        f"\nScreening bound, {WORKERS} slots busy: median epochs (all slots) before the first"
        f" report >= target; seeds {' '.join(map(str, args.seeds))}; a pool of {len(pool)}"
        f" configurations, {hopeless:.0%} of them hopeless after one epoch\n"
    )
    print("| proposals | " + " | ".join(f"{t:g}" for t in targets) + " |")
    print("|---|" + "---|" * len(targets))
    for label, cells in rows(curves, targets):
        print(f"| {label} | " + " | ".join(cells) + " |")
    for target in targets:
        hits = [first_hit(curve, target) for curve in pool]
        share = sum(hit is not None for hit in hits) / len(pool)
        fast = sum(hit is not None and hit <= 5 for hit in hits) / len(pool)
        print(f"\n{target:g}: {share:.1%} of the pool get there at all, {fast:.1%} within 5 epochs")


if __name__ == "__main__":
    main()
