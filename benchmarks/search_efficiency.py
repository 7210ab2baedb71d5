"""Search efficiency: epochs of training, all trials together, until a validation accuracy of
TARGET on the digits task (benchmarks/search_task.py), 4 trials at once, the same 40-trial budget
and the same seeds for everyone.

    .venv/bin/python -m benchmarks.search_efficiency [--seeds 1 2 3] [--target 0.925 0.935]
        [--peers ray optuna | --no-peers] [--no-floor | --floors oracle wide random]
        [--ours asha promotions curve tpe random] [--bounds curve random] [--save runs.json]

Several targets: every search runs once, on to the highest, and each target gets its table
(a lower target's first hit is the same as in a run stopped there).

Ours: adaptive ASHA (Determined 0.38's stopping ASHA), adaptive ASHA with promotions (promote
before creating, one bracket, a rung sends on its top 1/divisor once it holds divisor results,
trials ranked by their best report so far, BOHB-style TPE sampling fitted on every trial ranked
by the highest rung it reached), TPE and random search, each driven through the pure searcher
interface by a local executor: 4 worker processes train one epoch per running trial per round,
results are handed to the searcher in request order (so a run repeats exactly), paused trials
keep their checkpoint in memory and resume from it. Peers: Ray Tune's ASHA scheduler (random
sampling) and Optuna (TPE sampler with its SuccessiveHalvingPruner), installed from PyPI into
benchmarks/.peer-venv, same task code. Floors (lower bounds, not searches): the best
configuration of the space trained alone until it gets there (ORACLE), the same in all 4 slots
from the first round (the limit of a search 4 wide), and the best of the seed's 40 random
draws, known in advance. Bounds (--bounds, in the same run): the screening bound of a row's own
proposals (benchmarks/search_bounds.py), each configuration it created trained again from the
start: the fewest epochs in which any promotion rule could have got there with what that row
proposed, so a row above its bound lost to its allocation and a bound above the target says the
proposals, not the allocation, are what fall short.

Results, run by run, with the variants tried and the floors: docs/benchmarks.md, "Search
efficiency". In short (seeds 1-60, targets 0.92 0.925 0.93 0.935, quiet run of 2026-12-03): the
curve rule needed 0.63x, 0.55x, 0.58x and 0.55x of the best peer's epochs (0.5x is the target;
the night run of 2026-12-02, with Ray under load, gave 0.72x, 0.66x, 0.56x and 0.42x). The
screening bound of its own proposals was 35, 37, 51 and 61 epochs, against the 39, 47.25, 66.75
and 105.5 that half the best peer allowed in the quiet run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.search_bounds import first_hit, screen_bound
from benchmarks.search_task import MAX_EPOCHS, SPACE, init, train_epoch
from controlplane.domain.searcher import (
    Close,
    Create,
    Op,
    Promote,
    Shutdown,
    Stop,
    TrialClosed,
    TrialCreated,
    ValidationReported,
    make_searcher,
)

HERE = Path(__file__).resolve().parent
PEER_VENV = HERE / ".peer-venv"
PEER_PACKAGES = ["ray[tune]", "optuna", "numpy", "scikit-learn"]
WORKERS = 4
MAX_TRIALS = 40
BUDGET = 600
"""Epochs at most per run (all trials together); a run that has not hit the target by then
reports '>BUDGET'."""


def _asha(promotions: bool, rule: str = "rungs") -> dict[str, Any]:
    return {
        "name": "adaptive_asha",
        "metric": "accuracy",
        "smaller_is_better": False,
        "time_metric": "epochs",
        "max_time": MAX_EPOCHS,
        "divisor": 3,
        "max_trials": MAX_TRIALS,
        "max_concurrent_trials": WORKERS,
        "promotions": promotions,
        **({"promotion_rule": rule} if promotions else {}),
    }


CURVE_ROW = "adaptive ASHA + promotions, curve rule"
OURS_KEYS = {
    "asha": "adaptive ASHA (Determined 0.38 behaviour)",
    "promotions": "adaptive ASHA + promotions",
    "curve": CURVE_ROW,
    "tpe": "TPE",
    "random": "random",
}
"""--ours names for the rows below: our searchers are deterministic, so a run that only needs
the peers again (more seeds, another load) may leave out the slow rows."""

OURS: dict[str, dict[str, Any]] = {
    "adaptive ASHA (Determined 0.38 behaviour)": _asha(False),
    "adaptive ASHA + promotions": _asha(True),
    CURVE_ROW: _asha(True, "curve"),
    "TPE": {
        "name": "tpe",
        "metric": "accuracy",
        "smaller_is_better": False,
        "max_trials": MAX_TRIALS,
        "max_concurrent_trials": WORKERS,
        "n_startup_trials": 8,
    },
    "random": {
        "name": "random",
        "metric": "accuracy",
        "max_trials": MAX_TRIALS,
        "max_concurrent_trials": WORKERS,
    },
}


ORACLE: dict[str, Any] = {
    "batch_size": 32,
    "hidden": 84,
    "lr": 0.1023,
    "momentum": 0.9003,
    "weight_decay": 0.0008,
}
"""The best configuration of SPACE we know, found offline: 200 random configurations trained
27 epochs, the 10 with the best mean accuracy over epochs 5-27 trained again with 10 trial seeds
each; this one reached 0.935 within 27 epochs with 7 of its 10 seeds (epochs 11 to 27), the
next best with 5. No configuration of the 200 reached it with its first seed."""


def _epoch(job: tuple[dict[str, Any], dict[str, Any]]) -> tuple[dict[str, Any], float]:
    return train_epoch(*job)


def _to_target(job: tuple[dict[str, Any], int, float]) -> list[float]:
    """One trial from the start until the target or MAX_EPOCHS: its accuracies."""
    hparams, seed, target = job
    state = init(hparams, seed)
    accuracies: list[float] = []
    while len(accuracies) < MAX_EPOCHS and (not accuracies or accuracies[-1] < target):
        state, accuracy = train_epoch(hparams, state)
        accuracies.append(accuracy)
    return accuracies


def run_oracle(seed: int, target: float, pool: ProcessPoolExecutor) -> dict[str, Any]:
    """The floor with foresight of the space: ORACLE trained alone, trial after trial (each at
    most MAX_EPOCHS, a new trial seed each), until it reaches the target."""
    started = time.perf_counter()
    seeds = random.Random(seed)
    accuracies: list[float] = []
    while len(accuracies) < BUDGET and not any(acc >= target for acc in accuracies):
        accuracies += pool.submit(_to_target, (ORACLE, seeds.randrange(2**31), target)).result()
    summary = _summary(accuracies, time.perf_counter() - started)
    return {**summary, "rounds": len(accuracies)}


def run_oracle_wide(seed: int, target: float, pool: ProcessPoolExecutor) -> dict[str, Any]:
    """The physical floor of a search WORKERS wide: ORACLE in every slot from the first round,
    each with its own trial seed (a slot whose trial reaches MAX_EPOCHS starts another seed),
    the epochs of all slots counted as ours are, until the first report >= target. No search of
    4 trials at once that starts knowing nothing can beat it: the other slots train while the one
    that gets there does, and it knows the best configuration without looking."""
    started = time.perf_counter()
    seeds = random.Random(seed)
    slots = [init(ORACLE, seeds.randrange(2**31)) for _ in range(WORKERS)]
    accuracies: list[float] = []
    rounds = 0
    while len(accuracies) < BUDGET and not any(acc >= target for acc in accuracies):
        results = list(pool.map(_epoch, [(ORACLE, state) for state in slots]))
        rounds += 1
        accuracies += [accuracy for _, accuracy in results]
        slots = [
            state if state["epoch"] < MAX_EPOCHS else init(ORACLE, seeds.randrange(2**31))
            for state, _ in results
        ]
    return {**_summary(accuracies, time.perf_counter() - started), "rounds": rounds}


def random_configs(seed: int) -> list[tuple[dict[str, Any], int]]:
    """The MAX_TRIALS (hyperparameters, trial seed) the random searcher draws with `seed`."""
    searcher = make_searcher(OURS["random"], SPACE, seed)
    creates: list[Create] = []
    pending = [op for op in searcher.initial_operations() if isinstance(op, Create)]
    while pending:
        op = pending.pop(0)
        creates.append(op)
        searcher.on_event(TrialCreated(op.request_id))
        pending += [
            o for o in searcher.on_event(TrialClosed(op.request_id)) if isinstance(o, Create)
        ]
    return [(op.hparams, op.seed) for op in creates]


def run_best_of_random(seed: int, target: float, pool: ProcessPoolExecutor) -> dict[str, Any]:
    """The floor with foresight of the draws: of the MAX_TRIALS configurations random sampling
    gives this seed, each trained from the start to the target (4 workers), the one that gets
    there in the fewest epochs, as if it had been known in advance and trained alone."""
    trained = run_bound(random_configs(seed), target, pool)
    curves = trained["curves"]
    hits = [curve for curve in curves if curve[-1] >= target]
    best = min(hits, key=len) if hits else max(curves, key=max)
    summary = _summary(best, trained["wall_s"])
    if not hits:  # none of them gets there: no search of these draws can
        summary["epochs"] = sum(len(curve) for curve in curves)
        summary["accuracies"] = []
    return {**summary, "best": max(max(curve) for curve in curves), "rounds": len(best)}


def run_ours(
    config: dict[str, Any], seed: int, target: float, pool: ProcessPoolExecutor
) -> dict[str, Any]:
    searcher = make_searcher(config, SPACE, seed)
    trials: dict[str, dict[str, Any]] = {}
    proposed: list[tuple[dict[str, Any], int]] = []
    accuracies: list[float] = []
    done = False

    def apply(ops: list[Op]) -> None:
        nonlocal done
        for op in ops:
            if isinstance(op, Create):
                proposed.append((op.hparams, op.seed))
                trials[op.request_id] = {
                    "hparams": op.hparams,
                    "state": init(op.hparams, op.seed),
                    "status": "running",
                }
                apply(searcher.on_event(TrialCreated(op.request_id)))
            elif isinstance(op, Stop):
                trials[op.request_id]["status"] = "paused"
            elif isinstance(op, Promote):
                trials[op.request_id]["status"] = "running"
            elif isinstance(op, Close):
                if trials[op.request_id]["status"] != "closed":
                    trials[op.request_id]["status"] = "closed"
                    apply(searcher.on_event(TrialClosed(op.request_id)))
            elif isinstance(op, Shutdown):
                done = True

    started = time.perf_counter()
    round_ends: list[int] = []
    apply(searcher.initial_operations())
    while not done and len(accuracies) < BUDGET:
        running = [rid for rid, t in trials.items() if t["status"] == "running"]
        if not running:
            break
        jobs = [(trials[rid]["hparams"], trials[rid]["state"]) for rid in running]
        for rid, (state, accuracy) in zip(running, pool.map(_epoch, jobs), strict=True):
            trial = trials[rid]
            trial["state"] = state
            accuracies.append(accuracy)
            if trial["status"] != "running":
                continue  # closed or paused by an earlier result of this round
            metrics = {"accuracy": accuracy, "epochs": state["epoch"]}
            apply(searcher.on_event(ValidationReported(rid, metrics)))
            if state["epoch"] >= MAX_EPOCHS and trial["status"] == "running":
                trial["status"] = "closed"  # its code trained its full length
                apply(searcher.on_event(TrialClosed(rid)))
        round_ends.append(len(accuracies))
        if any(acc >= target for acc in accuracies):
            break
    summary = _summary(accuracies, time.perf_counter() - started)
    return {**summary, "round_ends": round_ends, "proposed": proposed}


def run_bound(
    proposed: list[tuple[dict[str, Any], int]], target: float, pool: ProcessPoolExecutor
) -> dict[str, Any]:
    """Every configuration a run proposed, trained afresh from the start to `target` (or
    MAX_EPOCHS), for the screening bound of that run's proposals (`bound_at`)."""
    started = time.perf_counter()
    curves = list(pool.map(_to_target, [(h, seed, target) for h, seed in proposed]))
    return {"curves": curves, "wall_s": time.perf_counter() - started}


def bound_at(trained: dict[str, Any], target: float) -> dict[str, Any]:
    """A row for the table: the screening bound (benchmarks/search_bounds.py) of a run's own
    proposals at `target`, the fewest epochs any allocation of them, 4 at once, could need."""
    curves = trained["curves"]
    bound = screen_bound([first_hit(curve, target) for curve in curves], WORKERS)
    return {
        "bound": bound,
        "accuracies": [],
        "epochs": BUDGET,
        "best": max((max(curve) for curve in curves), default=0.0),
        "wall_s": trained["wall_s"],
    }


def hit(result: dict[str, Any], target: float) -> int | None:
    """Epochs, all trials together, until the run's first report >= target (None: never); a
    bound row (`bound_at`) holds its figure."""
    if "bound" in result:
        return result["bound"]
    return first_hit(result["accuracies"], target)


def _rounds(result: dict[str, Any], target: float) -> str:
    """Wall-clock time in rounds until the hit (or until the run ended: '>N')."""
    epochs = hit(result, target)
    if "round_ends" in result:
        ends = result["round_ends"]
        if epochs is None:
            return f">{len(ends)}"
        return str(next(i + 1 for i, end in enumerate(ends) if end >= epochs))
    return str(result["rounds"]) if epochs is not None else f">{result['rounds']}"


def _summary(accuracies: list[float], wall: float) -> dict[str, Any]:
    return {
        "accuracies": accuracies,
        "epochs": len(accuracies),
        "best": max(accuracies, default=0.0),
        "wall_s": wall,
    }


def ensure_peers(say: Any = print) -> str | None:
    """None when the peer venv is ready, else why it is not."""
    python = PEER_VENV / "bin" / "python"
    probe = "import ray, optuna, sklearn, numpy; print(ray.__version__, optuna.__version__)"
    if python.exists():
        ok = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
        if ok.returncode == 0:
            say(f"peers: ray {ok.stdout.split()[0]}, optuna {ok.stdout.split()[1]}")
            return None
    say(f"installing {' '.join(PEER_PACKAGES)} into {PEER_VENV} (once; a few minutes) …")
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *PEER_PACKAGES],
            capture_output=True,
            text=True,
            timeout=1200,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"could not create the peer venv: {exc}"
    if pip.returncode != 0:
        return f"pip install failed: {pip.stderr.strip()[-300:]}"
    return None


def run_peer(peer: str, seed: int, target: float) -> dict[str, Any]:
    argv = [
        str(PEER_VENV / "bin" / "python"),
        str(HERE / "search_peers.py"),
        peer,
        str(seed),
        str(target),
        str(MAX_TRIALS),
        str(BUDGET),
    ]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{peer} failed: {out.stderr.strip()[-500:]}")
    return json.loads(lines[-1])


def _cell(
    results: list[dict[str, Any]], target: float
) -> tuple[str, str, str, str, str, float | None]:
    hits = [hit(r, target) for r in results]
    reached = [h for h in hits if h is not None]
    per_seed = " ".join(
        str(h) if h is not None else f">{r['epochs']}" for h, r in zip(hits, results, strict=True)
    )
    # A run that never reached the target counts as BUDGET epochs (a lower bound) in the median.
    median = statistics.median(_compute(results, target))
    best = max(r["best"] for r in results)
    wall = sum(r["wall_s"] for r in results)
    rounds = " ".join(_rounds(r, target) for r in results if "round_ends" in r or "rounds" in r)
    return (
        f"{len(reached)}/{len(results)}",
        per_seed,
        f"{median:g}" + ("" if len(reached) == len(results) else " (≥)"),
        rounds or "-",
        f"{best:.3f} / {wall:.0f}",
        median,
    )


FLOORS = {
    "oracle": ("floor: the best configuration, alone (oracle)", run_oracle),
    "wide": (f"floor: the best configuration, {WORKERS} at once (oracle)", run_oracle_wide),
    "random": (f"floor: the best of {MAX_TRIALS} random configurations, alone", run_best_of_random),
}
"""--floors names for the floor rows; 'random' trains all 40 draws of a seed to the target, so
it costs most."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--target",
        type=float,
        nargs="+",
        default=[0.93],
        help="one or more accuracies: every run goes on to the highest, and each gets a table",
    )
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--peers", nargs="+", choices=["ray", "optuna"], default=["ray", "optuna"])
    parser.add_argument("--no-floor", action="store_true")
    parser.add_argument("--floors", nargs="+", choices=list(FLOORS), default=list(FLOORS))
    parser.add_argument("--ours", nargs="+", choices=list(OURS_KEYS), default=list(OURS_KEYS))
    parser.add_argument(
        "--bounds",
        nargs="*",
        choices=list(OURS_KEYS),
        default=["curve", "random"],
        help="rows of ours whose own proposals get a screening-bound row (each proposal trained"
        " again to the highest target; none: leave them out)",
    )
    parser.add_argument(
        "--save", type=Path, help="also write every run's reports here (JSON), to read again"
    )
    args = parser.parse_args()
    chosen = {OURS_KEYS[key] for key in args.ours}
    targets = sorted(set(args.target))
    top = targets[-1]

    def progress(name: str, results: list[dict[str, Any]], target: float = top) -> None:
        print(f"  {name}: {[hit(r, target) for r in results]}", flush=True)

    # Searches run once, to the highest target (a lower one is reached on the way, so its
    # first hit is the same as in a run stopped there); the floors run once per target.
    searches: dict[str, list[dict[str, Any]]] = {}
    floors: dict[float, dict[str, list[dict[str, Any]]]] = {target: {} for target in targets}
    with ProcessPoolExecutor(WORKERS) as pool:
        for name, config in OURS.items():
            if name not in chosen:
                continue
            searches[name] = [run_ours(config, seed, top, pool) for seed in args.seeds]
            progress(name, searches[name])
        for key in args.bounds:
            if OURS_KEYS[key] not in searches:
                continue
            trained = [run_bound(r["proposed"], top, pool) for r in searches[OURS_KEYS[key]]]
            label = f"bound: {OURS_KEYS[key]}, its own proposals with foresight"
            for target in targets:
                floors[target][label] = [bound_at(t, target) for t in trained]
            progress(label, floors[top][label])
        for target in () if args.no_floor else targets:
            for name, run in (FLOORS[key] for key in args.floors):
                floors[target][name] = [run(seed, target, pool) for seed in args.seeds]
                progress(f"{name} ({target})", floors[target][name], target)
    if not args.no_peers:
        why = ensure_peers()
        for peer, label in (
            ("ray", "Ray Tune ASHAScheduler (peer)"),
            ("optuna", "Optuna TPE + SuccessiveHalvingPruner (peer)"),
        ):
            if peer not in args.peers:
                continue
            if why:
                print(f"  {label}: unavailable: {why}")
                continue
            searches[label] = [run_peer(peer, seed, top) for seed in args.seeds]
            progress(label, searches[label])
    if args.save:
        args.save.write_text(json.dumps({"seeds": args.seeds, "searches": searches}))
    for target in targets:
        _table(target, args.seeds, {**searches, **floors[target]})
    _notes()
    for target in targets:
        _ratio(target, searches)


def _table(target: float, seeds: list[int], rows: dict[str, list[dict[str, Any]]]) -> None:
    print()
    print(
        f"Epochs to reach validation accuracy {target} on digits (4 trials at once, "
        f"{MAX_TRIALS} trials, at most {MAX_EPOCHS} epochs each, {BUDGET} epochs in all; "
        f"seeds {' '.join(map(str, seeds))})"
    )
    header = (
        "searcher",
        "reached",
        "epochs per seed",
        "median epochs",
        "rounds per seed",
        "best acc / wall s",
    )
    table = [header] + [(name, *_cell(results, target)[:5]) for name, results in rows.items()]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for index, row in enumerate(table):
        print("| " + " | ".join(col.ljust(w) for col, w in zip(row, widths, strict=True)) + " |")
        if index == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def _notes() -> None:
    print(
        "\nepochs: compute, all trials together, until the first report >= the target (a run"
        " that never got there counts as the budget in the median, marked ≥). rounds (ours):"
        " wall-clock time in epochs with 4 workers (each round trains every running trial one"
        " epoch in parallel)."
    )
    print(
        "floor rows: not searches but lower bounds. The oracle knows the best configuration of"
        " the space; the best-of-random row knows which of this seed's random draws gets there"
        " first; both train only that one (rounds = its epochs). The oracle 4 at once trains it"
        f" in all {WORKERS} slots from the first round: the physical limit of a search that"
        f" runs {WORKERS} trials at once (rounds: wall-clock, as ours)."
    )
    print(
        "bound rows: the screening bound of a row's own proposals (benchmarks/search_bounds.py)."
        " Each configuration the row created, in order, is trained again from the start; the"
        f" i-th cannot start before round 1 + i // {WORKERS}, and the bound is the fewest epochs,"
        f" {WORKERS} slots busy, in which any allocation of those proposals could get there, as"
        " if it knew every trial's future after its first epoch. Below it no promotion, pausing"
        " or stopping rule can go; only better proposals can."
    )


def _compute(results: list[dict[str, Any]], target: float) -> list[int]:
    """Epochs to the target per seed, a miss counted as BUDGET (as in the median)."""
    return [hit(r, target) or BUDGET for r in results]


def ratio_interval(
    ours: list[int],
    peers: list[list[int]],
    rng: random.Random,
    draws: int = 2000,
    level: float = 0.9,
) -> tuple[float, float]:
    """A paired bootstrap interval of median(ours) / min over peers of median(peer).

    Seeds are drawn with replacement and the same draw is used for every row (they ran on the
    same seeds), the best peer chosen again in each draw. It says how far the ratio could move
    with another set of seeds of the same size; it cannot see how a peer's own runs vary with
    the machine's load (Ray's do)."""
    n = len(ours)
    ratios = []
    for _ in range(draws):
        picks = [rng.randrange(n) for _ in range(n)]
        best = min(statistics.median(peer[i] for i in picks) for peer in peers)
        ratios.append(statistics.median(ours[i] for i in picks) / best)
    ratios.sort()
    tail = (1 - level) / 2
    return ratios[int(tail * draws)], ratios[min(draws - 1, int((1 - tail) * draws))]


def _ratio(target: float, searches: dict[str, list[dict[str, Any]]]) -> None:
    peers = [_compute(r, target) for name, r in searches.items() if "(peer)" in name]
    for row in ("adaptive ASHA + promotions", CURVE_ROW):
        if not peers or row not in searches:
            continue
        ours = _compute(searches[row], target)
        ratio = statistics.median(ours) / min(statistics.median(peer) for peer in peers)
        low, high = ratio_interval(ours, peers, random.Random(0))
        print(
            f"{target}: {row} needed {ratio:.2f}x the epochs of the best peer (90 % bootstrap"
            f" interval over the seeds {low:.2f}x to {high:.2f}x; target: 0.5x or less)"
        )


if __name__ == "__main__":
    main()
