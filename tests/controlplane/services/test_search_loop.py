"""The searcher loop on both databases, through the service layer and the code paths a live
master uses (experiment creation, metric reports, early exits, an allocation's end).

Issue 15: `random` with max_trials 6 and max_concurrent_trials 2 ended with 2 trials (every
trial was made at creation); an ended trial now makes the searcher create the next one.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import (
    Allocation,
    Experiment,
    StateChange,
    TaskLog,
    Trial,
    TrialHparam,
    User,
)
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.searcher import (
    Create,
    TrialClosed,
    TrialCreated,
    ValidationReported,
    make_searcher,
)
from controlplane.domain.trial_exit import AllocationExit
from controlplane.services import experiment_control, experiments, search, trials
from controlplane.services.bootstrap import bootstrap
from controlplane.services.principals import Principal
from controlplane.services.scheduling import kills
from controlplane.services.scheduling.agent_events import close_allocation
from tests.conftest import PASSWORD
from tests.support.db_template import migrated

T0 = datetime(2026, 1, 1, tzinfo=UTC)
STORAGE = {"type": "shared_fs", "host_path": "/tmp"}
SPACE = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
    "layers": {"type": "int", "minval": 1, "maxval": 8},
}


def config(searcher: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "name": "search",
        "entrypoint": "python3 train.py",
        "searcher": {"metric": "loss", "smaller_is_better": True, **searcher},
        "hyperparameters": SPACE,
        "resources": {"slots_per_trial": 1},
        "reproducibility": {"experiment_seed": 7},
        **extra,
    }


@dataclass
class Env:
    maker: async_sessionmaker[AsyncSession]
    admin_id: int
    clock: itertools.count[int]

    def now(self) -> datetime:
        return T0 + timedelta(seconds=next(self.clock))

    async def principal(self, s: AsyncSession) -> Principal:
        admin = await s.get(User, self.admin_id)
        assert admin is not None
        return Principal(user=admin, token="")

    async def create(self, cfg: dict[str, Any], *, activate: bool = True) -> int:
        async with transaction(self.maker) as s:
            p = await self.principal(s)
            made = await experiments.create_experiment(
                s,
                p.user,
                experiments.NewExperiment(config=cfg, activate=activate),
                experiments.ExperimentDefaults(checkpoint_storage=STORAGE),
                now=self.now(),
            )
            assert made.experiment is not None
            return made.experiment.id

    async def trials(self, exp_id: int) -> list[Trial]:
        async with self.maker() as s:
            q = select(Trial).where(Trial.experiment_id == exp_id).order_by(Trial.id)
            return list(await s.scalars(q))

    async def experiment(self, exp_id: int) -> Experiment:
        async with self.maker() as s:
            exp = await s.get(Experiment, exp_id)
            assert exp is not None
            return exp

    async def snapshot(self, exp_id: int) -> tuple[object, object]:
        async with self.maker() as s:
            q = select(Experiment.searcher_snapshot, Experiment.searcher_token)
            row = (await s.execute(q.where(Experiment.id == exp_id))).one()
            return row[0], row[1]

    async def start(self, trial: Trial) -> str:
        """The scheduler placed the trial and its container runs."""
        alloc_id = f"{trial.task_id}.{next(self.clock)}"
        async with transaction(self.maker) as s:
            s.add(
                Allocation(
                    allocation_id=alloc_id,
                    task_id=trial.task_id,
                    state="RUNNING",
                    token_hash=alloc_id,
                    placement={"agent": []},
                    resource_pool="default",
                    start_time=self.now(),
                )
            )
        return alloc_id

    async def validate(self, trial: Trial, steps: int, metrics: dict[str, Any]) -> None:
        async with transaction(self.maker) as s:
            report = trials.MetricsReport("validation", steps, 1, metrics, None, None)
            await trials.report_metrics_batch(
                s, await self.principal(s), trial.id, [report], self.now()
            )

    async def exit(self, alloc_id: str, code: int = 0) -> None:
        async with transaction(self.maker) as s:
            alloc = await s.get(Allocation, alloc_id)
            assert alloc is not None
            ended = AllocationExit(
                exit_code=code,
                preempt_requested=alloc.preempt_requested,
                preempt_acked=alloc.preempt_acked,
            )
            await close_allocation(s, alloc, ended, self.now())

    async def run_to_end(self, trial: Trial, loss: float) -> None:
        alloc = await self.start(trial)
        await self.validate(trial, 10, {"loss": loss})
        await self.exit(alloc)


@pytest.fixture
async def env(db_url: str) -> AsyncIterator[Env]:
    await migrated(db_url)
    engine = make_engine(db_url)
    maker = make_sessionmaker(engine)
    async with transaction(maker) as s:
        await bootstrap(s, initial_password=PASSWORD, allow_empty=False, cluster_id="c", now=T0)
        admin = await s.scalar(select(User).where(User.username == "admin"))
        assert admin is not None
        admin_id = admin.id
    yield Env(maker=maker, admin_id=admin_id, clock=itertools.count(1))
    await engine.dispose()


def alive(rows: list[Trial]) -> list[Trial]:
    return [t for t in rows if t.state in ("ACTIVE", "PAUSED") or t.state.startswith("STOPPING")]


async def test_random_reaches_max_trials_two_at_a_time(env: Env) -> None:
    exp_id = await env.create(
        config({"name": "random", "max_trials": 6, "max_concurrent_trials": 2})
    )
    seen_alive = []
    while True:
        rows = await env.trials(exp_id)
        running = alive(rows)
        seen_alive.append(len(running))
        if not running:
            break
        await env.run_to_end(running[0], loss=float(len(rows)))
    rows = await env.trials(exp_id)
    assert len(rows) == 6
    assert max(seen_alive) == 2
    assert all(t.state == "COMPLETED" for t in rows)
    exp = await env.experiment(exp_id)
    assert exp.state == "COMPLETED" and exp.progress == pytest.approx(1.0)


async def test_the_trials_are_what_the_pure_searcher_asks_for(env: Env) -> None:
    """The master's trials equal a pure searcher's Creates when it is fed the same events."""
    searcher_cfg = {"name": "random", "max_trials": 5, "max_concurrent_trials": 2}
    cfg = config(searcher_cfg)
    exp_id = await env.create(cfg)
    events: list[object] = []
    while running := alive(await env.trials(exp_id)):
        trial = running[-1]
        await env.run_to_end(trial, loss=trial.seed % 97 / 10)
        events += [
            ValidationReported(trial.request_id, {"loss": trial.seed % 97 / 10}),
            TrialClosed(trial.request_id),
        ]
    pure = make_searcher(cfg["searcher"], SPACE, 7)
    creates = [op for op in pure.initial_operations() if isinstance(op, Create)]
    for op in list(creates):
        pure.on_event(TrialCreated(op.request_id))
    for event in events:
        for op in pure.on_event(event):
            if isinstance(op, Create):
                creates.append(op)
                pure.on_event(TrialCreated(op.request_id))
    rows = await env.trials(exp_id)
    assert [(t.request_id, t.hparams, t.seed) for t in rows] == [
        (c.request_id, c.hparams, c.seed) for c in creates
    ]


async def test_grid_creates_the_product(env: Env) -> None:
    grid = {
        "a": {"type": "categorical", "vals": [1, 2, 3]},
        "b": {"type": "int", "minval": 0, "maxval": 10, "count": 3},
    }
    cfg = {**config({"name": "grid", "max_concurrent_trials": 4}), "hyperparameters": grid}
    exp_id = await env.create(cfg)
    assert len(await env.trials(exp_id)) == 4
    while running := alive(await env.trials(exp_id)):
        await env.run_to_end(running[0], 1.0)
    rows = await env.trials(exp_id)
    points = sorted((t.hparams["a"], t.hparams["b"]) for t in rows)
    assert points == sorted(itertools.product([1, 2, 3], [0, 5, 10]))
    assert (await env.experiment(exp_id)).state == "COMPLETED"


async def test_a_crash_mid_decision_loses_and_duplicates_nothing(env: Env) -> None:
    """A transaction that dies after the searcher decided (the master killed) leaves the
    snapshot and the trials as they were; redoing the event decides the same way once."""
    exp_id = await env.create(
        config({"name": "random", "max_trials": 4, "max_concurrent_trials": 1})
    )
    (first,) = await env.trials(exp_id)
    before = await env.snapshot(exp_id)
    alloc = await env.start(first)
    with pytest.raises(RuntimeError, match="killed"):
        async with transaction(env.maker) as s:
            row = await s.get(Allocation, alloc)
            assert row is not None
            await close_allocation(s, row, AllocationExit(exit_code=0), env.now())
            assert (
                len(list(await s.scalars(select(Trial).where(Trial.experiment_id == exp_id)))) == 2
            )
            raise RuntimeError("killed")
    assert await env.snapshot(exp_id) == before
    assert [t.request_id for t in await env.trials(exp_id)] == [first.request_id]
    await env.exit(alloc)
    rows = await env.trials(exp_id)
    assert len(rows) == 2 and len({t.request_id for t in rows}) == 2


@pytest.mark.parametrize(
    "searcher",
    [
        {"name": "single"},
        {"name": "random", "max_trials": 2, "max_concurrent_trials": 2},
        {"name": "grid", "max_concurrent_trials": 2},
    ],
)
async def test_searchers_that_never_read_the_metric_complete_without_it(
    env: Env, searcher: dict[str, Any]
) -> None:
    """Determined's core_api/11_generic_metrics: `metric: x`, validations without `x`."""
    space = {"a": {"type": "categorical", "vals": [1, 2]}}
    exp_id = await env.create({**config({**searcher, "metric": "x"}), "hyperparameters": space})
    while running := alive(await env.trials(exp_id)):
        alloc = await env.start(running[0])
        await env.validate(running[0], 10, {"z/me.t r%i]": 1.0})
        await env.exit(alloc)
    rows = await env.trials(exp_id)
    assert rows and {t.state for t in rows} == {"COMPLETED"}
    assert (await env.experiment(exp_id)).state == "COMPLETED"


async def test_a_validation_without_the_metric_errors_the_experiment(env: Env) -> None:
    searcher = {
        "name": "adaptive_asha", "max_trials": 3, "max_concurrent_trials": 3, "max_time": 9,
        "time_metric": "batches",
    }  # fmt: skip
    exp_id = await env.create(config(searcher))
    rows = await env.trials(exp_id)
    allocs = [await env.start(t) for t in rows]
    await env.validate(rows[0], 5, {"accuracy": 0.5})
    exp = await env.experiment(exp_id)
    assert exp.state == "STOPPING_ERROR"
    async with env.maker() as s:
        lines = list(await s.scalars(select(TaskLog.log).where(TaskLog.task_id == rows[0].task_id)))
        reasons = list(
            await s.scalars(select(StateChange.reason).where(StateChange.entity == "experiment"))
        )
    assert any("lacks the metric 'loss'" in line and "accuracy" in line for line in lines)
    assert any("lacks the metric 'loss'" in r for r in reasons)
    assert {t.state for t in await env.trials(exp_id)} == {"STOPPING_CANCELED"}
    for alloc in allocs:
        await env.exit(alloc)
    assert (await env.experiment(exp_id)).state == "ERROR"
    assert len(await env.trials(exp_id)) == 3


async def test_an_invalid_hp_trial_is_replaced_and_killed_if_it_lingers(env: Env) -> None:
    exp_id = await env.create(
        config({"name": "random", "max_trials": 2, "max_concurrent_trials": 1})
    )
    (first,) = await env.trials(exp_id)
    alloc = await env.start(first)
    reported = env.now()
    async with transaction(env.maker) as s:
        await trials.report_early_exit(
            s, await env.principal(s), first.id, "EXITED_REASON_INVALID_HP", reported
        )
    assert [t.state for t in await env.trials(exp_id)] == ["STOPPING_COMPLETED"]
    async with transaction(env.maker) as s:
        row = await s.get(Allocation, alloc)
        assert row is not None and row.preempt_requested
        assert await kills.expire_preemptions(s, "default", reported + timedelta(seconds=9)) == {}
        due = await kills.expire_preemptions(s, "default", reported + timedelta(seconds=11))
        assert list(due) == [alloc]
    await env.exit(alloc, 137)
    # Replaced at its exit, as Determined's random searcher does.
    assert [t.state for t in await env.trials(exp_id)] == ["COMPLETED", "ACTIVE"]
    # The replacement does not count: two more trials complete the search.
    await env.run_to_end((await env.trials(exp_id))[1], 1.0)
    await env.run_to_end((await env.trials(exp_id))[2], 1.0)
    assert len(await env.trials(exp_id)) == 3
    assert (await env.experiment(exp_id)).state == "COMPLETED"


async def test_a_paused_search_creates_paused_trials_and_resumes_on_activate(env: Env) -> None:
    exp_id = await env.create(
        config({"name": "random", "max_trials": 3, "max_concurrent_trials": 1})
    )
    (first,) = await env.trials(exp_id)
    alloc = await env.start(first)
    async with transaction(env.maker) as s:
        await experiment_control.pause(s, (await env.principal(s)).user, exp_id, env.now())
        row = await s.get(Allocation, alloc)
        assert row is not None and row.preempt_requested
        row.preempt_acked = True
    await env.exit(alloc)  # checkpointed and stopped: paused, nothing new is made
    assert [t.state for t in await env.trials(exp_id)] == ["PAUSED"]
    async with transaction(env.maker) as s:
        await experiment_control.kill_trial(s, (await env.principal(s)).user, first.id, env.now())
    # The searcher replaces the killed trial, but the search is paused: so is the new trial.
    assert [t.state for t in await env.trials(exp_id)] == ["CANCELED", "PAUSED"]
    async with transaction(env.maker) as s:
        await experiment_control.activate(s, (await env.principal(s)).user, exp_id, env.now())
    assert [t.state for t in await env.trials(exp_id)] == ["CANCELED", "ACTIVE"]
    assert (await env.experiment(exp_id)).state == "ACTIVE"


async def test_best_validation_is_the_best_not_the_latest(env: Env) -> None:
    cfg = config({"name": "single", "smaller_is_better": False})
    cfg["searcher"]["metric"] = "accuracy"
    exp_id = await env.create(cfg)
    (trial,) = await env.trials(exp_id)
    await env.start(trial)
    for steps, acc in ((1, 0.5), (2, 0.9), (3, 0.7)):
        await env.validate(trial, steps, {"accuracy": acc})
    async with env.maker() as s:
        assert await trials.best_validation(s, exp_id) == pytest.approx(0.9)
    (trial,) = await env.trials(exp_id)
    assert trial.searcher_metric_value == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("searcher", "space", "message"),
    [
        ({"name": "no_such_searcher"}, SPACE, "searcher"),
        ({"name": "random", "max_trials": 0}, SPACE, "max_trials"),
        (
            {"name": "grid"},
            {f"h{i}": {"type": "int", "minval": 0, "maxval": 9, "count": 10} for i in range(8)},
            "grid",
        ),
    ],
)
async def test_what_cannot_be_searched_is_refused_and_nothing_is_made(
    env: Env, searcher: dict[str, Any], space: dict[str, Any], message: str
) -> None:
    cfg = {**config(searcher), "hyperparameters": space}
    with pytest.raises(InvalidArgument, match=message):
        await env.create(cfg)
    async with env.maker() as s:
        assert list(await s.scalars(select(Experiment.id))) == []


async def run_until_told(env: Env, trial: Trial, steps: int, loss_of: Any) -> int:
    """Report a validation per step until the master asks the trial to stop; the trial then
    acknowledges and exits 0, as the harness does. Returns the steps it ran."""
    alloc = await env.start(trial)
    ran = trial.total_batches
    for step in range(trial.total_batches + 1, steps + 1):
        await env.validate(trial, step, {"loss": loss_of(trial, step), "batches": step})
        ran = step
        async with env.maker() as s:
            row = await s.get(Allocation, alloc)
            assert row is not None
            if row.preempt_requested:
                break
    async with transaction(env.maker) as s:
        row = await s.get(Allocation, alloc)
        assert row is not None
        row.preempt_acked = row.preempt_requested
    await env.exit(alloc)
    return ran


async def test_adaptive_asha_stops_losers_early_and_completes(env: Env) -> None:
    searcher = {
        "name": "adaptive_asha", "max_trials": 8, "max_concurrent_trials": 2, "max_time": 9,
        "time_metric": "batches", "divisor": 3, "mode": "aggressive",
    }  # fmt: skip
    space = {"x": {"type": "double", "minval": -1.0, "maxval": 1.0}}
    exp_id = await env.create({**config(searcher), "hyperparameters": space})
    ran: dict[int, int] = {}
    most_alive = 0
    while running := alive(await env.trials(exp_id)):
        most_alive = max(most_alive, len(running))
        trial = running[0]
        ran[trial.id] = await run_until_told(
            env, trial, 9, lambda t, step: (t.hparams["x"] - 0.3) ** 2 + 1 / step
        )
    rows = await env.trials(exp_id)
    assert len(rows) == 8 and most_alive <= 2
    assert min(ran.values()) < 9 and max(ran.values()) == 9, ran
    assert {t.state for t in rows} == {"COMPLETED"}
    assert (await env.experiment(exp_id)).state == "COMPLETED"


async def test_failures_follow_max_restarts_then_the_search_goes_on(env: Env) -> None:
    cfg = config({"name": "random", "max_trials": 2, "max_concurrent_trials": 1}, max_restarts=1)
    exp_id = await env.create(cfg)
    (first,) = await env.trials(exp_id)
    await env.exit(await env.start(first), 1)  # restart 1 of 1: queued again
    assert [(t.state, t.restarts) for t in await env.trials(exp_id)] == [("ACTIVE", 1)]
    await env.exit(await env.start(first), 1)  # past max_restarts
    rows = await env.trials(exp_id)
    assert [t.state for t in rows] == ["ERROR", "ACTIVE"]
    await env.run_to_end(rows[1], 0.5)
    assert (await env.experiment(exp_id)).state == "COMPLETED"


async def test_a_search_whose_every_trial_errors_ends_in_error(env: Env) -> None:
    cfg = config({"name": "random", "max_trials": 2, "max_concurrent_trials": 2}, max_restarts=0)
    exp_id = await env.create(cfg)
    for trial in await env.trials(exp_id):
        await env.exit(await env.start(trial), 3)
    assert {t.state for t in await env.trials(exp_id)} == {"ERROR"}
    assert (await env.experiment(exp_id)).state == "ERROR"


async def test_asha_with_promotions_pauses_losers_and_resumes_them(env: Env) -> None:
    """Promotions: a loser of a rung is paused (not closed) and may be promoted later, then
    resumes where it stopped; the search still completes with every trial."""
    searcher = {
        "name": "async_halving", "num_rungs": 2, "max_trials": 6, "max_concurrent_trials": 2,
        "max_time": 8, "time_metric": "batches", "divisor": 2, "promotions": True,
    }  # fmt: skip
    space = {"x": {"type": "double", "minval": -1.0, "maxval": 1.0}}
    exp_id = await env.create({**config(searcher), "hyperparameters": space})
    for _ in range(100):
        active = [t for t in await env.trials(exp_id) if t.state == "ACTIVE"]
        if not active:
            break
        # Each new trial is worse than the ones before: as a rung fills, an early loser
        # enters its top 1/divisor and is promoted.
        await run_until_told(env, active[0], 8, lambda t, step: t.id + 1 / step)
    rows = await env.trials(exp_id)
    async with env.maker() as s:
        moves = (
            await s.execute(
                select(StateChange.entity_id, StateChange.from_state, StateChange.to_state).where(
                    StateChange.entity == "trial"
                )
            )
        ).all()
    paused = {tid for tid, a, b in moves if (a, b) == ("ACTIVE", "PAUSED")}
    promoted = {tid for tid, a, b in moves if (a, b) == ("PAUSED", "ACTIVE")}
    assert paused and promoted and promoted <= paused, (paused, promoted)
    assert {t.state for t in rows} == {"COMPLETED"} and len(rows) == 6
    assert (await env.experiment(exp_id)).state == "COMPLETED"


async def test_concurrent_trial_ends_each_reach_the_searcher(env: Env) -> None:
    """Two trials of one search end at the same moment, in two transactions: each end is a
    decision of its own (none is lost to the other, no request id is made twice)."""
    exp_id = await env.create(
        config({"name": "random", "max_trials": 6, "max_concurrent_trials": 2})
    )
    for _ in range(2):
        first, second = alive(await env.trials(exp_id))
        allocs = [await env.start(first), await env.start(second)]
        await asyncio.gather(*(env.exit(a) for a in allocs))
    rows = await env.trials(exp_id)
    assert len(rows) == 6 and len({t.request_id for t in rows}) == 6
    assert [t.state for t in rows] == ["COMPLETED"] * 4 + ["ACTIVE"] * 2


async def test_a_replayed_create_makes_nothing_and_is_not_news(env: Env) -> None:
    """A Create whose trial is made already (its task exists) writes nothing and tells the
    searcher nothing; a new request's Create makes its trial."""

    exp_id = await env.create(
        config({"name": "random", "max_trials": 4, "max_concurrent_trials": 1})
    )
    (first,) = await env.trials(exp_id)
    async with transaction(env.maker) as s:
        exp = await s.get(Experiment, exp_id)
        assert exp is not None
        again = Create(first.request_id, {"lr": 0.01, "layers": 2}, 1)
        assert await search._apply(s, exp, again, env.now()) == []
        fresh = Create("fresh", {"lr": 0.01, "layers": 2}, 1)
        assert await search._apply(s, exp, fresh, env.now()) == [TrialCreated("fresh")]
    rows = await env.trials(exp_id)
    assert [(t.request_id, t.hparams) for t in rows] == [
        (first.request_id, first.hparams),
        ("fresh", {"lr": 0.01, "layers": 2}),
    ]
    async with env.maker() as s:
        created = await s.scalars(
            select(StateChange.entity_id).where(
                StateChange.entity == "trial", StateChange.from_state.is_(None)
            )
        )
        assert sorted(created) == sorted([str(first.id), str(rows[1].id)])
        hparams = await s.execute(
            select(
                TrialHparam.name, TrialHparam.number, TrialHparam.text, TrialHparam.experiment_id
            )
            .where(TrialHparam.trial_id == rows[1].id)
            .order_by(TrialHparam.name)
        )
        assert [tuple(h) for h in hparams] == [
            ("layers", 2.0, "2", exp_id),
            ("lr", 0.01, "0.01", exp_id),
        ]
