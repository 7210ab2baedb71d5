"""Trial reads and the reports a running trial makes (metrics, progress, status)."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from controlplane.db.models import Checkpoint, Experiment, Metric, Trial
from controlplane.domain import limits
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.search_plan import EARLY_EXIT_REASONS, better, validation_problem
from controlplane.domain.searcher import TrialProgress, ValidationReported
from controlplane.domain.states import RunState
from controlplane.services import metric_rollups, search
from controlplane.services.dialect import built, insert_ignoring_duplicates
from controlplane.services.principals import Principal, can_write_trial

# A trial the searcher hears about: not one it closed already, nor of a stopping experiment.
_SEARCHED = (RunState.ACTIVE, RunState.PAUSED)
# As Determined (model.MetricGroup.Validate): any name but empty or with a '.', which splits
# "group.metric" ids; also no control characters (NUL cannot be stored) and at most the
# 128 characters the column holds.
_GROUP = re.compile(r"[^.\x00-\x1f\x7f]{1,128}")
MAX_METRIC_VALUES = 1_000_000


async def get_trial(session: AsyncSession, trial_id: int) -> Trial:
    trial = await session.get(Trial, trial_id)
    if trial is None:
        raise NotFound(f"trial {trial_id} not found")
    return trial


async def require_trials(session: AsyncSession, trial_ids: Sequence[int]) -> None:
    """NotFound naming the lowest of `trial_ids` that is not a trial, as `get_trial` words it."""
    found = set(await session.scalars(select(Trial.id).where(Trial.id.in_(trial_ids))))
    missing = sorted(set(trial_ids) - found)
    if missing:
        raise NotFound(f"trial {missing[0]} not found")


async def trial_for_write(session: AsyncSession, principal: Principal, trial_id: int) -> Trial:
    # One statement for the trial and its owner: every metrics report starts here.
    row = (
        await session.execute(
            select(Trial, Experiment.owner_id)
            .outerjoin(Experiment, Experiment.id == Trial.experiment_id)
            .where(Trial.id == trial_id)
        )
    ).first()
    if row is None:
        raise NotFound(f"trial {trial_id} not found")
    trial, owner_id = row
    can_write_trial(principal, trial, owner_id or -1)
    return trial


async def list_trials(
    session: AsyncSession,
    experiment_id: int,
    *,
    states: tuple[str, ...],
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[list[Trial], int]:
    base = select(Trial).where(Trial.experiment_id == experiment_id)
    if states:
        base = base.where(Trial.state.in_([s.removeprefix("STATE_") for s in states]))
    total = await session.scalar(select(func.count()).select_from(base.subquery())) or 0
    query = base.order_by(Trial.id.desc() if descending else Trial.id).offset(offset)
    if limit > 0:
        query = query.limit(limit)
    return list(await session.scalars(query)), total


def _clean_value(value: Any, path: str) -> Any:
    """JSON can't carry NaN/Inf; keep them as the strings the Determined client writes."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
    return value


@dataclass(frozen=True)
class MetricsReport:
    group: str
    steps_completed: int
    trial_run_id: int
    avg_metrics: dict[str, Any]
    batch_metrics: list[dict[str, Any]] | None
    report_time: datetime | None


def check_group(group: str) -> None:
    if not _GROUP.fullmatch(group):
        raise InvalidArgument(
            f"invalid metric group {group[:200]!r}: use 1-128 characters, no '.' and no"
            " control characters"
        )


def _validate(report: MetricsReport) -> None:
    check_group(report.group)
    if report.steps_completed < 0:
        raise InvalidArgument("stepsCompleted must be 0 or more")
    count = len(report.avg_metrics) + sum(len(b) for b in report.batch_metrics or [])
    if count > MAX_METRIC_VALUES:
        raise InvalidArgument(f"a metrics report may hold at most {MAX_METRIC_VALUES} values")
    for block in (report.avg_metrics, *(report.batch_metrics or ())):
        for name in block:
            if len(name) > limits.METRIC_NAME_CHARS:
                raise InvalidArgument(
                    f"metric name {name[:32]!r}... is {len(name)} characters long; "
                    f"at most {limits.METRIC_NAME_CHARS} are allowed"
                )


def _finite_number(value: Any) -> float | None:
    """A metric value usable for comparisons: a finite int or float (not a bool, not huge)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and abs(value) > sys.float_info.max:
        return None  # float() would overflow
    return float(value) if math.isfinite(value) else None


def _searcher_value(exp_config: dict[str, Any], avg: dict[str, Any]) -> float | None:
    metric = (exp_config.get("searcher") or {}).get("metric")
    return _finite_number(avg.get(metric)) if metric else None


async def report_metrics(
    session: AsyncSession, principal: Principal, trial_id: int, report: MetricsReport, now: datetime
) -> None:
    """Store one report; a retried report with the same key is dropped (idempotent)."""
    await report_metrics_batch(session, principal, trial_id, [report], now)


def _metric_row(trial_id: int, report: MetricsReport, now: datetime) -> dict[str, Any]:
    avg = {k: _clean_value(v, k) for k, v in report.avg_metrics.items()}
    batches = (
        [{k: _clean_value(v, k) for k, v in b.items()} for b in report.batch_metrics]
        if report.batch_metrics is not None
        else None
    )
    return {
        "trial_id": trial_id,
        "trial_run_id": report.trial_run_id,
        "group": report.group,
        "total_batches": report.steps_completed,
        "end_time": report.report_time or now,
        "metrics": {"avg_metrics": avg, "batch_metrics": batches},
        "archived": False,
    }


async def report_metrics_batch(
    session: AsyncSession,
    principal: Principal,
    trial_id: int,
    reports: Sequence[MetricsReport],
    now: datetime,
) -> None:
    """Store reports of one trial in one statement, as if each had been posted in turn.

    A report whose key (trial, group, steps, run) is stored already, or earlier in the same
    batch, is dropped: a retried batch stores nothing twice. Every report is checked before
    anything is written, so a bad one refuses the whole batch (naming its index) and stores none.
    """
    for index, report in enumerate(reports):
        try:
            _validate(report)
        except InvalidArgument as exc:
            prefix = f"reports[{index}]: " if len(reports) > 1 else ""
            raise InvalidArgument(f"{prefix}{exc}") from None
    if not reports:
        return
    validations = [r for r in reports if r.group == "validation"]
    exp = None
    if validations:
        # Locked before anything is written: the searcher decides from one snapshot at a time.
        found = await search.trial_with_locked_experiment(session, trial_id)
        if found is None:
            raise NotFound(f"trial {trial_id} not found")
        trial, exp = found
        can_write_trial(principal, trial, exp.owner_id)
    else:
        trial = await trial_for_write(session, principal, trial_id)
    rows: dict[tuple[str, int, int], dict[str, Any]] = {}
    for report in reports:
        key = (report.group, report.steps_completed, report.trial_run_id)
        rows.setdefault(key, _metric_row(trial.id, report, now))
    # The rows the insert returns are the ones it stored: a validation not among them was
    # stored already (a retry, not news), so no second read tells them apart.
    # The rows go as parameters, not in the statement (`.values(rows)`): a statement with its
    # rows in it has no cache key, so SQLAlchemy compiled it afresh for every report.
    stmt = built(session, _INSERT_METRICS, lambda _: _insert_metrics(session))
    inserted = {tuple(r) for r in (await session.execute(stmt, list(rows.values()))).all()}
    await metric_rollups.record(
        session,
        trial.id,
        (
            (row["group"], row["total_batches"], row["metrics"]["avg_metrics"])
            for key, row in rows.items()
            if key in inserted
        ),
    )
    steps = max(r.steps_completed for r in reports)
    values: dict[str, Any] = {}
    if steps > trial.total_batches:
        values["total_batches"] = steps
    if exp is not None:
        values.update(_searcher_metrics(exp.config, trial, validations))
    await _update_trial(session, trial, values)
    if exp is not None:
        fresh = [
            r for r in validations if ("validation", r.steps_completed, r.trial_run_id) in inserted
        ]
        await _validations_reported(session, exp, trial, fresh, now)


# The trial's columns a report moves, as one Core UPDATE: the unit of work's flush of the one
# changed object cost more than the rest of the report's bookkeeping. The object is told the
# values as committed, so it agrees with its row and the commit's flush has nothing to write.
_UPDATE_TRIAL = update(Trial.__table__).where(Trial.__table__.c.id == bindparam("trial_id_"))


async def _update_trial(session: AsyncSession, trial: Trial, values: dict[str, Any]) -> None:
    if not values:
        return
    await session.execute(_UPDATE_TRIAL, {"trial_id_": trial.id, **values})
    for key, value in values.items():
        set_committed_value(trial, key, value)


def _searcher_metrics(
    exp_config: dict[str, Any], trial: Trial, validations: Sequence[MetricsReport]
) -> dict[str, Any]:
    """The trial's latest and best searcher metric after the validations (only what changes);
    the last one with the searcher's metric wins, as if each had been posted in turn."""
    smaller = bool((exp_config.get("searcher") or {}).get("smaller_is_better", True))
    latest, best = trial.searcher_metric_value, trial.best_searcher_metric
    for report in validations:
        value = _searcher_value(exp_config, report.avg_metrics)
        if value is not None:
            latest = value
            if better(value, best, smaller):
                best = value
    out: dict[str, Any] = {}
    if latest != trial.searcher_metric_value:
        out["searcher_metric_value"] = latest
    if best != trial.best_searcher_metric:
        out["best_searcher_metric"] = best
    return out


_INSERT_METRICS = "trials.insert_metrics"  # its key in `dialect.built`


def _insert_metrics(session: AsyncSession) -> Any:
    table = Metric.__table__
    return insert_ignoring_duplicates(
        session, table, ["trial_id", "group", "total_batches", "trial_run_id"]
    ).returning(table.c.group, table.c.total_batches, table.c.trial_run_id)


async def _validations_reported(
    session: AsyncSession,
    exp: Experiment,
    trial: Trial,
    fresh: Sequence[MetricsReport],
    now: datetime,
) -> None:
    """Tell the searcher of each new validation (a validation it cannot use stops the
    experiment with an error)."""
    searcher = exp.config.get("searcher") or {}
    if not search.is_searched(exp) or RunState(trial.state) not in _SEARCHED:
        return  # the searcher is done with it (closed, or the experiment is stopping)
    events: list[object] = []
    for report in fresh:
        problem = validation_problem(searcher, report.avg_metrics)
        if problem is not None:
            await search.fail(session, exp, problem, now, task_id=trial.task_id)
            return
        events.append(ValidationReported(trial.request_id, dict(report.avg_metrics)))
    await search.feed(session, exp, events, now)


async def best_validation(session: AsyncSession, experiment_id: int) -> float | None:
    """The best searcher metric any validation of the experiment reported (None: none yet)."""
    exp = await session.get(Experiment, experiment_id)
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    smaller = bool((exp.config.get("searcher") or {}).get("smaller_is_better", True))
    agg = func.min if smaller else func.max
    return await session.scalar(
        select(agg(Trial.best_searcher_metric)).where(Trial.experiment_id == experiment_id)
    )


@dataclass(frozen=True)
class Workload:
    kind: str  # "training" | "validation" | "checkpoint" | other group name
    total_batches: int
    end_time: datetime
    metric: Metric | None = None
    checkpoint: Checkpoint | None = None


_FILTERS = {
    "FILTER_OPTION_UNSPECIFIED": None,
    "FILTER_OPTION_TRAINING": {"training"},
    "FILTER_OPTION_VALIDATION": {"validation"},
    "FILTER_OPTION_CHECKPOINT": {"checkpoint"},
    "FILTER_OPTION_CHECKPOINT_OR_VALIDATION": {"checkpoint", "validation"},
}


async def workloads(
    session: AsyncSession, trial_id: int, *, filter_option: str, descending: bool
) -> list[Workload]:
    await get_trial(session, trial_id)
    kinds = _FILTERS.get(filter_option)
    items: list[Workload] = []
    metrics = await session.scalars(
        select(Metric).where(
            Metric.trial_id == trial_id,
            Metric.archived.is_(False),
            Metric.group.in_(("training", "validation")),
        )
    )
    for m in metrics:
        if kinds is None or m.group in kinds:
            items.append(Workload(m.group, m.total_batches, m.end_time, metric=m))
    if kinds is None or "checkpoint" in kinds:
        for c in await session.scalars(select(Checkpoint).where(Checkpoint.trial_id == trial_id)):
            items.append(Workload("checkpoint", c.steps_completed, c.report_time, checkpoint=c))
    order = {"training": 0, "validation": 1, "checkpoint": 2}
    items.sort(
        key=lambda w: (w.total_batches, order.get(w.kind, 3), w.end_time), reverse=descending
    )
    return items


async def latest_metric(session: AsyncSession, trial_id: int, group: str) -> Metric | None:
    return await session.scalar(
        select(Metric)
        .where(Metric.trial_id == trial_id, Metric.group == group, Metric.archived.is_(False))
        .order_by(Metric.total_batches.desc(), Metric.id.desc())
        .limit(1)
    )


async def best_validation_metric(session: AsyncSession, trial: Trial) -> Metric | None:
    """The trial's validation with the best searcher metric (ties: the earliest)."""
    config = await session.scalar(
        select(Experiment.config).where(Experiment.id == trial.experiment_id)
    )
    searcher = (config or {}).get("searcher") or {}
    name, smaller = searcher.get("metric"), bool(searcher.get("smaller_is_better", True))
    if not name:
        return None
    best, best_value = None, None
    rows = await session.scalars(
        select(Metric)
        .where(
            Metric.trial_id == trial.id, Metric.group == "validation", Metric.archived.is_(False)
        )
        .order_by(Metric.total_batches, Metric.id)
    )
    for row in rows:
        value = _finite_number((row.metrics.get("avg_metrics") or {}).get(name))
        if value is None:
            continue
        if best_value is None or (value < best_value if smaller else value > best_value):
            best, best_value = row, value
    return best


async def metrics_for_trial(
    session: AsyncSession, trial_id: int, group: str | None, *, after_id: int = 0, limit: int = 1000
) -> list[Metric]:
    query = select(Metric).where(
        Metric.trial_id == trial_id, Metric.archived.is_(False), Metric.id > after_id
    )
    if group:
        query = query.where(Metric.group == group)
    return list(await session.scalars(query.order_by(Metric.id).limit(limit)))


async def live_metrics_page(
    session: AsyncSession,
    trial_id: int,
    group: str,
    *,
    after: tuple[int, int] | None = None,
    limit: int = 1000,
) -> list[Metric]:
    """A trial's live (not archived) reports of `group` in step order (ties: id), up to `limit`,
    from just past `after` = (steps, id) of the last row of the previous page."""
    query = select(Metric).where(
        Metric.trial_id == trial_id, Metric.group == group, Metric.archived.is_(False)
    )
    if after is not None:
        steps, row_id = after
        query = query.where(
            or_(
                Metric.total_batches > steps,
                and_(Metric.total_batches == steps, Metric.id > row_id),
            )
        )
    query = query.order_by(Metric.total_batches, Metric.id).limit(limit)
    return list(await session.scalars(query))


async def set_progress(
    session: AsyncSession, principal: Principal, trial_id: int, progress: float, now: datetime
) -> None:
    """The trial's own progress; the experiment's is the searcher's view of the whole search."""
    if not 0 <= progress <= 1 or math.isnan(progress):
        raise InvalidArgument(f"progress must be between 0 and 1 (got {progress})")
    trial = await trial_for_write(session, principal, trial_id)
    # Locked before anything is written (on SQLite a write first would hold the database).
    exp = await search.lock_experiment(session, trial.experiment_id)
    trial.progress = progress
    if exp is None:
        return
    if not search.is_searched(exp):
        exp.progress = progress
    elif RunState(trial.state) in _SEARCHED:
        await search.feed(session, exp, [TrialProgress(trial.request_id, progress)], now)


async def set_runner_state(
    session: AsyncSession, principal: Principal, trial_id: int, state: str
) -> None:
    trial = await trial_for_write(session, principal, trial_id)
    trial.runner_state = state[:255]


async def report_early_exit(
    session: AsyncSession, principal: Principal, trial_id: int, reason: str, now: datetime
) -> None:
    """The trial's code gave up (invalid hyperparameters, or its user stopped it): the
    searcher hears of it (an invalid-hyperparameter trial is replaced, as in Determined), and
    the trial is asked to exit, then killed EARLY_EXIT_KILL_SECONDS later if it still runs.
    Recorded once: a repeated report changes nothing."""
    if reason not in EARLY_EXIT_REASONS:
        raise InvalidArgument(f"unknown early-exit reason '{reason}'")
    trial = await trial_for_write(session, principal, trial_id)
    if trial.early_exit_reason is not None:
        return
    exp = await search.lock_experiment(session, trial.experiment_id)
    trial.early_exit_reason = reason
    if exp is None or not search.is_searched(exp):
        return
    if RunState(trial.state) not in _SEARCHED:
        return
    await search.exit_early(session, exp, trial, EARLY_EXIT_REASONS[reason], now)


async def archive_abandoned_metrics(
    session: AsyncSession, trial: Trial, *, resume_step: int, config: dict[str, Any]
) -> int:
    """Determined's rollback: a new run of `trial` starts at `resume_step` (its checkpoint's
    step, or 0 from scratch), so what earlier runs reported past that step is abandoned.

    Those metrics are archived (kept, no longer live): every step then has one live value, the
    one the new run reports again. The trial's step count and searcher metric (what the
    experiment's best validation reads) are recomputed from what stays live. Returns how many
    rows were archived.
    """
    archived = await session.execute(
        update(Metric)
        .where(
            Metric.trial_id == trial.id,
            Metric.archived.is_(False),
            Metric.total_batches > resume_step,
        )
        .values(archived=True)
    )
    count = archived.rowcount or 0
    if not count:
        return 0
    await metric_rollups.rebuild(session, trial.id, resume_step + 1)
    live = (Metric.trial_id == trial.id, Metric.archived.is_(False))
    latest = await session.scalar(select(func.max(Metric.total_batches)).where(*live))
    searcher_value = None
    validations = await session.scalars(
        select(Metric)
        .where(*live, Metric.group == "validation")
        .order_by(Metric.total_batches.desc(), Metric.id.desc())
    )
    for row in validations:  # the latest live one with the searcher's metric, as when reported
        searcher_value = _searcher_value(config, row.metrics.get("avg_metrics") or {})
        if searcher_value is not None:
            break
    trial.total_batches = max(latest or 0, resume_step)
    trial.searcher_metric_value = searcher_value
    return count
