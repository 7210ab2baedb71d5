"""Run Resolute's benchmarks and print the tables: `python benchmarks/run.py [--quick]`.

1. Metric ingestion: Resolute's REST endpoint vs the MLflow tracking server, both into the same
   PostgreSQL, plus PostgreSQL's own COPY rate for the same data (ingest.py, peer_mlflow.py,
   copy_floor.py).
2. GET /api/v1/experiments latency with 10,000 experiments and 100,000 trials (listing.py).
3. One scheduling pass per scheduler over 1,000 agents and 1k / 10k / 100k pending requests
   (scheduling.py; pure CPU, needs no PostgreSQL).
4. The life of a task on `det deploy local` (lifecycle.py): submit → first training step per
   runtime, and 500 trivial commands on 4 agents x 2 slots against Slurm on 8 slots.
5. The web UI's list API over 10,000 experiments / 100,000 trials (webui.py --list-only; the
   browser, chart and log figures with `--only webui`).

Every database it creates is uniquely named and dropped at the end; every server it starts is
stopped. The whole run is bounded by --max-minutes. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` and `controlplane` importable
    _repo = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(_repo))
    try:
        import asyncpg  # noqa: F401
        import httpx  # noqa: F401
    except ImportError:  # started with a bare `python`: use the project's venv when there is one
        _venv_python = _repo / ".venv" / "bin" / "python"
        if _venv_python.exists() and Path(sys.executable) != _venv_python:
            os.execv(str(_venv_python), [str(_venv_python), *sys.argv])
        raise

from benchmarks import copy_floor, ingest, lifecycle, listing, peer_mlflow, pg, scheduling
from benchmarks.report import Results, print_tables

QUICK = {
    "ingest_s": 8.0,
    "warmup_s": 2.0,
    "copy_s": 2.0,
    "listing_requests": 100,
    "listing_warmup": 10,
    "scheduling_sizes": "1000,10000",
    "lifecycle_runs": 1,
    "lifecycle_tasks": 50,
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description=(
            "Resolute benchmarks: metric ingestion (vs MLflow and COPY), listing, scheduling."
        ),
    )
    p.add_argument("--quick", action="store_true", help="a ~1-minute smoke run (CI)")
    p.add_argument("--only", choices=["ingest", "listing", "scheduling", "lifecycle", "checkpoint",
                                       "harness", "provisioning", "spot_notice", "webui",
                                       "login", "quickstart", "capacity"],
                   help="run one benchmark (checkpoint: see benchmarks/checkpoint.py)")  # fmt: skip
    p.add_argument("--ingest-seconds", type=float, default=60.0, dest="ingest_s",
                   help="timed ingestion per system (default 60)")  # fmt: skip
    p.add_argument("--warmup-seconds", type=float, default=5.0, dest="warmup_s",
                   help="untimed ingestion before each timed run (default 5)")  # fmt: skip
    p.add_argument("--copy-seconds", type=float, default=8.0, dest="copy_s",
                   help="time spent in COPY per shape (default 8)")  # fmt: skip
    p.add_argument("--clients", type=int, default=16, help="concurrent trial clients (16)")
    p.add_argument("--no-mlflow", action="store_true", help="skip the MLflow peer")
    p.add_argument("--mlflow-workers", type=int, default=None,
                   help="MLflow server workers (default: MLflow's own, 4)")  # fmt: skip
    p.add_argument("--experiments", type=int, default=10_000, help="listing: experiments")
    p.add_argument("--trials-per-experiment", type=int, default=10, help="listing: trials each")
    p.add_argument("--listing-requests", type=int, default=500, help="timed requests per form")
    p.add_argument("--listing-warmup", type=int, default=20, help="untimed requests per form")
    p.add_argument("--scheduling-sizes", default="1000,10000,100000",
                   help="scheduling: pending requests per pass, comma-separated")  # fmt: skip
    p.add_argument("--scheduling-agents", type=int, default=1_000, help="scheduling: agents")
    p.add_argument("--lifecycle-runs", type=int, default=5,
                   help="lifecycle: timed submit → first step runs per runtime (5)")  # fmt: skip
    p.add_argument("--lifecycle-pairs", type=int, default=1,
                   help="lifecycle: docker runs of ours, each between two engine runs; the "
                        "median share is the row (1)")  # fmt: skip
    p.add_argument("--lifecycle-tasks", type=int, default=500,
                   help="lifecycle: trivial tasks per system (500)")  # fmt: skip
    p.add_argument("--lifecycle-runtimes", default="process,docker",
                   help="lifecycle: runtimes to measure, comma-separated")  # fmt: skip
    p.add_argument("--max-minutes", type=float, default=20.0, help="stop everything after this")
    p.add_argument("--json", type=Path, help="also write the results as JSON here")
    style = p.add_mutually_exclusive_group()
    style.add_argument("--plain", action="store_true", help="plain-text tables")
    style.add_argument("--rich", action="store_true", help="rich tables even when piped")
    p.add_argument("--keep-workdir", action="store_true", help="keep server logs (temp dir)")
    p.add_argument("--fail-on-miss", action="store_true",
                   help="exit 1 when a target is missed")  # fmt: skip
    args = p.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            if p.get_default(key) == getattr(args, key):  # explicit flags still win
                setattr(args, key, value)
    return args


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def uses_postgres(args: argparse.Namespace) -> bool:
    return args.only in (None, "ingest", "listing")


async def run_all(args: argparse.Namespace, res: Results, workdir: Path) -> None:
    if uses_postgres(args):
        await run_with_postgres(args, res, workdir)
    if args.only in (None, "scheduling"):
        t0 = time.perf_counter()
        sizes = tuple(int(n) for n in args.scheduling_sizes.split(",") if n.strip())
        say(
            f"[5/5] scheduling: one pass over {args.scheduling_agents:,} agents and "
            f"{', '.join(f'{n:,}' for n in sizes)} pending requests, per scheduler …"
        )
        deadline = args.deadline - 15  # leave time to print what was measured
        res.scheduling = await asyncio.to_thread(
            scheduling.run, sizes, args.scheduling_agents, say=say, deadline=deadline
        )
        res.phase_s["scheduling"] = time.perf_counter() - t0
    if args.only in (None, "lifecycle"):
        t0 = time.perf_counter()
        runtimes = tuple(r.strip() for r in args.lifecycle_runtimes.split(",") if r.strip())
        say(
            f"lifecycle: submit → first step ({', '.join(runtimes)}), "
            f"{args.lifecycle_tasks} trivial tasks vs Slurm …"
        )
        res.lifecycle = await lifecycle.run(
            workdir, runs=args.lifecycle_runs, tasks=args.lifecycle_tasks, runtimes=runtimes,
            say=say, deadline=args.deadline - 15, pairs=args.lifecycle_pairs,
        )  # fmt: skip
        res.phase_s["lifecycle"] = time.perf_counter() - t0


async def run_with_postgres(args: argparse.Namespace, res: Results, workdir: Path) -> None:
    async with pg.databases() as dbs:
        if args.only in (None, "ingest"):
            t0 = time.perf_counter()
            db = await dbs.create("ingest")
            say(f"[1/5] Resolute ingestion: {args.clients} clients for {args.ingest_s:.0f}s …")
            res.resolute = await ingest.run(
                db, workdir, clients=args.clients, duration_s=args.ingest_s,
                warmup_s=args.warmup_s,
            )  # fmt: skip
            res.phase_s["resolute"] = time.perf_counter() - t0

            t0 = time.perf_counter()
            say(f"[2/5] PostgreSQL COPY floors: {args.copy_s:.0f}s per shape …")
            res.copies.append(await copy_floor.copy_reports(db, args.copy_s))
            res.copies.append(await copy_floor.copy_values(db, args.copy_s))
            res.phase_s["copy"] = time.perf_counter() - t0

            if not args.no_mlflow:
                t0 = time.perf_counter()
                say(f"[3/5] MLflow ingestion: {args.clients} clients for {args.ingest_s:.0f}s …")
                mdb = await dbs.create("mlflow")
                res.mlflow = await peer_mlflow.run(
                    mdb, workdir / "mlflow", clients=args.clients, duration_s=args.ingest_s,
                    warmup_s=args.warmup_s, workers=args.mlflow_workers, say=say,
                )  # fmt: skip
                if not res.mlflow.available:
                    say(f"  MLflow unavailable: {res.mlflow.note}")
                res.phase_s["mlflow"] = time.perf_counter() - t0
        if args.only in (None, "listing"):
            t0 = time.perf_counter()
            say(
                f"[4/5] listing: {args.experiments:,} experiments × "
                f"{args.trials_per_experiment} trials, {args.listing_requests} requests per form …"
            )
            ldb = await dbs.create("listing")
            res.listing = await listing.run(
                ldb, workdir, experiments=args.experiments,
                trials_per_experiment=args.trials_per_experiment,
                requests=args.listing_requests, warmup=args.listing_warmup, say=say,
            )  # fmt: skip
            res.phase_s["listing"] = time.perf_counter() - t0


async def main_async(args: argparse.Namespace) -> Results:
    settings = {
        k: getattr(args, k)
        for k in ("quick", "clients", "ingest_s", "warmup_s", "copy_s", "listing_requests",
                  "listing_warmup", "experiments", "trials_per_experiment", "mlflow_workers",
                  "scheduling_sizes", "scheduling_agents", "lifecycle_runs", "lifecycle_tasks",
                  "lifecycle_runtimes", "lifecycle_pairs")
    }  # fmt: skip
    settings["postgresql"] = await pg.server_version() if uses_postgres(args) else None
    settings["cpus"] = os.cpu_count()
    settings["load_before"] = round(os.getloadavg()[0], 2)
    if settings["load_before"] > 1.0:
        say(
            f"note: load average is {settings['load_before']} before starting; other work on "
            "this machine will lower and scatter the numbers"
        )
    res = Results(settings=settings)
    args.deadline = time.perf_counter() + args.max_minutes * 60
    workdir = Path(tempfile.mkdtemp(prefix="resolute-bench-"))
    try:
        async with asyncio.timeout(args.max_minutes * 60):
            await run_all(args, res, workdir)
    except TimeoutError:
        say(f"stopped: the run took longer than --max-minutes {args.max_minutes}")
        raise
    finally:
        if args.keep_workdir:
            say(f"server logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return res


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "checkpoint" in argv and ("--only" in argv or "--only=checkpoint" in argv):
        from benchmarks import checkpoint  # its own flags: --size-gib, --repeats, --no-s3, ...

        rest = [a for a in argv if a not in ("--only", "checkpoint", "--only=checkpoint")]
        return checkpoint.main(rest)
    args = parse_args(argv)
    if args.only == "harness":  # its own deployment and table
        from benchmarks import harness_overhead

        missed = harness_overhead.main([])
        return missed if args.fail_on_miss else 0
    if args.only == "provisioning":  # pure CPU, its own table
        from benchmarks import provisioning

        extra = ["--json", str(args.json)] if args.json else []
        missed = provisioning.main(["--quick", *extra] if args.quick else extra)
        return 1 if (missed and args.fail_on_miss) else 0
    if args.only == "capacity":  # pure CPU: the recorded capacity day, three strategies
        from benchmarks import capacity_day

        extra = ["--json", str(args.json)] if args.json else []
        missed = capacity_day.main(extra)
        return 1 if (missed and args.fail_on_miss) else 0
    if args.only == "spot_notice":  # its own deployment, moto and table
        from benchmarks import spot_notice

        extra = ["--json", str(args.json)] if args.json else []
        missed = spot_notice.main(["--quick", *extra] if args.quick else extra)
        return 1 if (missed and args.fail_on_miss) else 0
    if args.only == "login":  # its own master, 100 guessers and table
        from benchmarks import login_throttle

        extra = ["--json", str(args.json)] if args.json else []
        missed = login_throttle.main(["--quick", *extra] if args.quick else extra)
        return 1 if (missed and args.fail_on_miss) else 0
    if args.only == "webui":  # its own master, seed, browser and table
        from benchmarks import quickstart, webui

        missed = webui.main(["--quick"] if args.quick else [])
        # Issue 42: the first hour of a new user starts with the quick start (about 2 minutes
        # and 1.5 GB of disk, so not in --quick).
        if not args.quick:
            print()
            missed += quickstart.main([])
        return 1 if (missed and args.fail_on_miss) else 0
    if args.only == "quickstart":  # a fresh copy of the checkout, its own port and data dir
        from benchmarks import quickstart

        missed = quickstart.main([])
        return 1 if (missed and args.fail_on_miss) else 0
    started = time.perf_counter()
    res = asyncio.run(main_async(args))
    res.phase_s["total"] = time.perf_counter() - started
    res.settings["load_after"] = round(os.getloadavg()[0], 2)
    # rich boxes on a terminal; plain text (easy to paste or diff) when piped, unless --rich
    print_tables(res, plain=args.plain or not (args.rich or sys.stdout.isatty()))
    misses = res.misses()
    if args.only is None:
        misses += run_webui_list(args, started)
    print()
    print("Targets: all met." if not misses else "Targets missed:\n  " + "\n  ".join(misses))
    postgres = res.settings["postgresql"]
    print(
        f"({f'PostgreSQL {postgres}, ' if postgres else ''}{res.settings['cpus']} CPUs, 1-min load "
        f"{res.settings['load_before']} before / {res.settings['load_after']} after; "
        f"total {res.phase_s['total']:.0f} s)"
    )
    if args.json:
        args.json.write_text(json.dumps(res.as_json(), indent=2))
    return 1 if (misses and args.fail_on_miss) else 0


WEBUI_LIST_S = 150  # benchmarks/webui.py --list-only: ~40 s seeding + the requests, loaded


def run_webui_list(args: argparse.Namespace, started: float) -> list[str]:
    """The web UI's list API after the other tables, when --max-minutes leaves room for it."""
    left = args.max_minutes * 60 - (time.perf_counter() - started)
    if left < WEBUI_LIST_S:
        say(
            f"web UI list API skipped: {left:.0f} s of --max-minutes left, it needs ~{WEBUI_LIST_S}"
        )
        return []
    from benchmarks import webui

    print("\nWeb UI list API (benchmarks/webui.py --list-only):")
    requests = "30" if args.quick else "100"
    missed = webui.main(["--list-only", "--requests", requests])
    return [f"web UI list API: {missed} target(s) missed"] if missed else []


if __name__ == "__main__":
    sys.exit(main())
