"""Determined's rollback, on both databases: when a trial's next run starts from an earlier
checkpoint (or from scratch), what earlier runs reported past that point is archived, so every
step has one live value and reads see the newer run's.

Issue 14, finding 4: after an agent was lost and the trial resumed elsewhere from its last
checkpoint, the abandoned run's metrics past the checkpoint stayed live (611 and 617 training
entries for 600 steps, two values at repeated steps).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import Allocation, Checkpoint, Experiment, Metric, Task, Trial, User
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services import trials
from controlplane.services.bootstrap import bootstrap
from controlplane.services.principals import Principal
from controlplane.services.trial_launch import trial_launch_spec
from tests.conftest import PASSWORD
from tests.support.db_template import migrated

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = {
    "entrypoint": "python3 train.py",
    "searcher": {"name": "single", "metric": "loss", "smaller_is_better": True, "max_length": 10},
    "resources": {"slots_per_trial": 1},
}


@dataclass
class Db:
    maker: async_sessionmaker[AsyncSession]
    trial_id: int
    task_id: str
    admin_id: int


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Db]:
    await migrated(db_url)
    engine = make_engine(db_url)
    maker = make_sessionmaker(engine)
    async with transaction(maker) as s:
        await bootstrap(s, initial_password=PASSWORD, allow_empty=False, cluster_id="c", now=T0)
    async with transaction(maker) as s:
        admin = await s.scalar(select(User).where(User.username == "admin"))
        assert admin is not None
        s.add(Task(task_id="t1", task_type="TRIAL", owner_id=admin.id, start_time=T0))
        exp = Experiment(
            project_id=1,
            owner_id=admin.id,
            name="rollback",
            state="ACTIVE",
            config=CONFIG,
            original_config="",
            searcher_type="single",
            job_id="j1",
            start_time=T0,
        )
        s.add(exp)
        await s.flush()
        trial = Trial(
            experiment_id=exp.id,
            task_id="t1",
            request_id="r1",
            state="ACTIVE",
            hparams={},
            seed=1,
            start_time=T0,
        )
        s.add(trial)
        await s.flush()
        ids = Db(maker=maker, trial_id=trial.id, task_id="t1", admin_id=admin.id)
    yield ids
    await engine.dispose()


async def report(db: Db, run: int, group: str, steps: range, value: float) -> None:
    """Steps of one run; the value at step s is `value + s` (so runs differ everywhere)."""
    async with transaction(db.maker) as s:
        admin = await s.get(User, db.admin_id)
        assert admin is not None
        reports = [
            trials.MetricsReport(
                group=group,
                steps_completed=step,
                trial_run_id=run,
                avg_metrics={"loss": value + step},
                batch_metrics=None,
                report_time=T0 + timedelta(seconds=step),
            )
            for step in steps
        ]
        await trials.report_metrics_batch(
            s, Principal(user=admin, token=""), db.trial_id, reports, T0
        )


async def start_run(db: Db, run: int, checkpoint_at: int | None) -> dict[str, str]:
    """Run `run - 1` ends (after a checkpoint at `checkpoint_at`, if any); run `run` is placed:
    its launch spec is built as the scheduler builds it, then its allocation is opened."""
    async with transaction(db.maker) as s:
        if checkpoint_at is not None:
            s.add(
                Checkpoint(
                    uuid=str(uuid.uuid4()),
                    task_id=db.task_id,
                    trial_id=db.trial_id,
                    state="COMPLETED",
                    report_time=T0 + timedelta(seconds=checkpoint_at),
                    resources={},
                    metadata_={"steps_completed": checkpoint_at},
                    steps_completed=checkpoint_at,
                )
            )
        await s.flush()
        spec = await trial_launch_spec(s, db.task_id)
        s.add(
            Allocation(
                allocation_id=f"{db.task_id}.{run}",
                task_id=db.task_id,
                state="TERMINATED",
                token_hash=uuid.uuid4().hex,
                start_time=T0,
                end_time=T0,
            )
        )
    return spec.environment


async def live_steps(db: Db, group: str) -> list[tuple[int, float]]:
    async with transaction(db.maker) as s:
        found = await trials.workloads(
            s, db.trial_id, filter_option="FILTER_OPTION_UNSPECIFIED", descending=False
        )
        return [
            (w.total_batches, w.metric.metrics["avg_metrics"]["loss"])
            for w in found
            if w.kind == group and w.metric is not None
        ]


async def test_a_run_from_a_checkpoint_archives_what_the_abandoned_run_reported_past_it(
    db: Db,
) -> None:
    await start_run(db, 1, None)
    await report(db, 1, "training", range(1, 11), 100)
    await report(db, 1, "validation", range(5, 11, 5), 0.5)  # the best loss is at step 10
    env = await start_run(db, 2, checkpoint_at=5)
    assert env["DET_STEPS_COMPLETED"] == "5" and env["DET_TRIAL_RUN_ID"] == "2"

    # Between the runs: steps 1..5 live, the trial is back at step 5 with step 5's validation.
    assert [s for s, _ in await live_steps(db, "training")] == [1, 2, 3, 4, 5]
    async with transaction(db.maker) as s:
        trial = await trials.get_trial(s, db.trial_id)
        assert trial.total_batches == 5
        assert trial.searcher_metric_value == 5.5
        assert (await trials.best_validation(s, trial.experiment_id)) == 5.5

    await report(db, 2, "training", range(6, 11), 200)
    await report(db, 2, "validation", range(10, 11), 1.5)
    training = await live_steps(db, "training")
    assert training == [
        *((s, 100.0 + s) for s in range(1, 6)),
        *((s, 200.0 + s) for s in range(6, 11)),
    ]
    assert await live_steps(db, "validation") == [(5, 5.5), (10, 11.5)]
    async with transaction(db.maker) as s:
        trial = await trials.get_trial(s, db.trial_id)
        assert trial.total_batches == 10
        latest = await trials.latest_metric(s, db.trial_id, "training")
        assert latest is not None and latest.metrics["avg_metrics"]["loss"] == 210
        latest = await trials.latest_metric(s, db.trial_id, "validation")
        assert latest is not None and latest.trial_run_id == 2
        # Run 1's validation at step 10 (loss 10.5) was the best; it is archived now.
        best = await trials.best_validation_metric(s, trial)
        assert best is not None and best.metrics["avg_metrics"]["loss"] == 5.5
        rows = await trials.metrics_for_trial(s, db.trial_id, "training")
        assert [m.total_batches for m in rows] == list(range(1, 11))
        # Archived, not deleted.
        archived = await s.scalar(
            select(func.count()).select_from(Metric).where(Metric.archived.is_(True))
        )
        assert archived == 6


async def test_a_run_from_scratch_archives_every_step_reported_before(db: Db) -> None:
    await start_run(db, 1, None)
    await report(db, 1, "training", range(0, 4), 100)
    await start_run(db, 2, checkpoint_at=None)
    assert [s for s, _ in await live_steps(db, "training")] == [0]
    await report(db, 2, "training", range(1, 4), 200)
    assert await live_steps(db, "training") == [(0, 100.0), (1, 201.0), (2, 202.0), (3, 203.0)]


async def test_the_first_run_archives_nothing(db: Db) -> None:
    await report(db, 0, "training", range(1, 4), 100)  # reported before any run (by a user)
    await start_run(db, 1, None)
    assert [s for s, _ in await live_steps(db, "training")] == [1, 2, 3]
