"""The master's bookkeeping for a large random search, without running any trial:
`python benchmarks/search_bookkeeping.py [--trials 10000] [--postgres]`.

Every trial goes through the code paths a live master uses, one transaction each as the API
and the agent link make them: the scheduler's allocation (a row; not counted), one validation
report (`trials.report_metrics_batch`, which feeds the searcher), and the allocation's end
(`close_allocation`, whose trial end feeds the searcher, which creates the next trial in the
same transaction). The master's CPU time for the report and the end (this process, every
thread: the SQLite driver's included) is divided by the number of trials. Target (issue 15):
at most 5 ms per trial.

Peers in the same run: the pure searcher alone (the search itself, no database), and the same
master paths without a searcher (every trial made up front, as before issue 15): the difference
is what the searcher loop adds.

Measured (docs/experiment-lifecycle.md, "Cost"): `--trials 1000 --postgres` on the shared
2-core machine at load average 2.3-3.0, twice: 4.7-4.9 ms per trial on SQLite and 5.3-5.5 on
PostgreSQL, from 7.0-7.1 and 7.5-7.7 for main (b44127b) in the same session; earlier rounds:
10.0 and 11.5 (load 9-16) before the second round of cuts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import select

from controlplane.db.models import Allocation, Trial, User
from controlplane.db.session import make_engine, make_sessionmaker, transaction, upgrade
from controlplane.domain.searcher import (
    Create,
    TrialClosed,
    TrialCreated,
    ValidationReported,
    make_searcher,
)
from controlplane.domain.trial_exit import AllocationExit
from controlplane.services import experiments, trials
from controlplane.services.bootstrap import bootstrap
from controlplane.services.principals import Principal
from controlplane.services.scheduling.agent_events import close_allocation

TARGET_MS = 5.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)
SPACE = {
    "lr": {"type": "log", "minval": -5, "maxval": -1, "base": 10},
    "width": {"type": "int", "minval": 8, "maxval": 512},
    "act": {"type": "categorical", "vals": ["relu", "gelu", "tanh"]},
}


def searcher_config(max_trials: int, concurrent: int) -> dict[str, Any]:
    return {
        "name": "random",
        "metric": "loss",
        "smaller_is_better": True,
        "max_trials": max_trials,
        "max_concurrent_trials": concurrent,
    }


@dataclass(frozen=True)
class Row:
    what: str
    trials: int
    cpu_s: float
    wall_s: float

    @property
    def ms_per_trial(self) -> float:
        return self.cpu_s * 1000 / max(self.trials, 1)


def pure_search(max_trials: int, concurrent: int) -> Row:
    """The searcher alone, fed what the master would feed it."""
    cpu, wall = time.process_time(), time.perf_counter()
    searcher = make_searcher(searcher_config(max_trials, concurrent), SPACE, 1)
    pending = [op for op in searcher.initial_operations() if isinstance(op, Create)]
    done = 0
    while pending:
        op = pending.pop(0)
        searcher.on_event(TrialCreated(op.request_id))
        searcher.on_event(ValidationReported(op.request_id, {"loss": 0.5}))
        pending += [
            o for o in searcher.on_event(TrialClosed(op.request_id)) if isinstance(o, Create)
        ]
        searcher.snapshot()  # the master saves it with each decision
        done += 1
    return Row("pure searcher (no database)", done, time.process_time() - cpu,
               time.perf_counter() - wall)  # fmt: skip


async def master_search(
    url: str, max_trials: int, concurrent: int, what: str, *, searcher: bool = True
) -> Row:
    """`searcher` False: the peer without a searcher, as before issue 15: every trial is made
    up front and nothing is told of its reports or its end."""
    await upgrade(url)
    engine = make_engine(url)
    maker = make_sessionmaker(engine)
    clock = iter(range(1, 10**9))

    def now() -> datetime:
        return T0 + timedelta(milliseconds=next(clock))

    async with transaction(maker) as s:
        await bootstrap(s, initial_password="Bench-Passw0rd!", allow_empty=False,
                        cluster_id="bench", now=T0)  # fmt: skip
        admin = await s.scalar(select(User).where(User.username == "admin"))
        assert admin is not None
        principal = Principal(user=admin, token="")
        config = {
            "name": "bookkeeping",
            "entrypoint": "python3 train.py",
            "searcher": searcher_config(max_trials, concurrent),
            "hyperparameters": SPACE,
            "reproducibility": {"experiment_seed": 1},
        }
        made = await experiments.create_experiment(
            s, admin, experiments.NewExperiment(config=config),
            experiments.ExperimentDefaults(checkpoint_storage={"type": "shared_fs",
                                                               "host_path": "/tmp"}),
            now=now(),
        )  # fmt: skip
        assert made.experiment is not None
        exp_id = made.experiment.id
        if not searcher:
            made.experiment.searcher_token = None
    cpu_total = 0.0
    wall = time.perf_counter()
    finished = 0
    while True:
        async with maker() as s:
            alive = list(
                await s.scalars(
                    select(Trial).where(Trial.experiment_id == exp_id, Trial.state == "ACTIVE")
                )
            )
        if not alive:
            break
        for trial in alive:
            alloc_id = f"{trial.task_id}.1"
            async with transaction(maker) as s:
                s.add(Allocation(allocation_id=alloc_id, task_id=trial.task_id, state="RUNNING",
                                 token_hash=alloc_id, placement={"a": []},
                                 resource_pool="default", start_time=now()))  # fmt: skip
            cpu = time.process_time()  # the allocation above is the scheduler's, not counted
            async with transaction(maker) as s:
                report = trials.MetricsReport("validation", 100, 1, {"loss": 0.5}, None, None)
                await trials.report_metrics_batch(s, principal, trial.id, [report], now())
            async with transaction(maker) as s:
                alloc = await s.get(Allocation, alloc_id)
                assert alloc is not None
                await close_allocation(s, alloc, AllocationExit(exit_code=0), now())
            cpu_total += time.process_time() - cpu
            finished += 1
    row = Row(what, finished, cpu_total, time.perf_counter() - wall)
    await engine.dispose()
    return row


def print_table(rows: list[Row]) -> None:
    print(f"{'bookkeeping of a random search':<44} {'trials':>7} {'CPU s':>8} "
          f"{'wall s':>8} {'CPU ms/trial':>13}")  # fmt: skip
    for r in rows:
        print(f"{r.what:<44} {r.trials:>7} {r.cpu_s:>8.2f} {r.wall_s:>8.2f} "
              f"{r.ms_per_trial:>13.2f}")  # fmt: skip
    print(f"target: master CPU <= {TARGET_MS:g} ms per trial")


# Without a searcher every trial's end reads every trial of the experiment (to see whether it
# was the last): quadratic, so the peer runs at most this many.
PEER_TRIALS = 2000


async def run(max_trials: int, concurrent: int, postgres: bool) -> list[Row]:
    rows = [pure_search(max_trials, concurrent)]
    few = min(max_trials, PEER_TRIALS)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        rows.append(await master_search(url, max_trials, concurrent, "master, SQLite"))
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        peer = "peer: master, SQLite, no searcher"
        rows.append(await master_search(url, few, few, peer, searcher=False))
    if postgres:
        from benchmarks import pg

        async with pg.databases() as dbs:
            url = pg.sqlalchemy_url(await dbs.create("search"))
            rows.append(await master_search(url, max_trials, concurrent, "master, PostgreSQL"))
            url = pg.sqlalchemy_url(await dbs.create("peer"))
            peer = "peer: master, PostgreSQL, no searcher"
            rows.append(await master_search(url, few, few, peer, searcher=False))
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python benchmarks/search_bookkeeping.py")
    p.add_argument("--trials", type=int, default=10_000)
    p.add_argument("--concurrent", type=int, default=16)
    p.add_argument("--postgres", action="store_true", help="also on PostgreSQL (127.0.0.1)")
    args = p.parse_args(argv)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    print_table(asyncio.run(run(args.trials, args.concurrent, args.postgres)))


if __name__ == "__main__":
    main()
