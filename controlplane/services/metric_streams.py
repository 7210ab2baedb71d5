"""The rows Determined's experiment metric streams read each round (`domain.metric_streams`
decides what is sent). Each function takes a session of its own round: the streams poll for
minutes and hold no session between rounds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Experiment, Metric, MetricRollup, Trial
from controlplane.domain.metric_streams import TrialStanding
from controlplane.domain.series_rollup import COARSEST
from controlplane.domain.states import RunState
from controlplane.services import metric_series

# Rows read per round at most: a stream that falls behind catches up over several rounds.
ROUND_ROWS = 10_000


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


async def all_terminal(session: AsyncSession, experiment_ids: Sequence[int]) -> bool:
    states = await session.scalars(
        select(Experiment.state).where(Experiment.id.in_(experiment_ids))
    )
    return all(RunState(s).is_terminal for s in states)


async def metric_names(session: AsyncSession, experiment_ids: Sequence[int]) -> dict[str, set[str]]:
    """Every metric name each group of the experiments' trials reported, from the rollups'
    coarsest level (a few rows per trial and name, not every report)."""
    rows = await session.execute(
        select(MetricRollup.group, MetricRollup.name)
        .join(Trial, Trial.id == MetricRollup.trial_id)
        .where(
            Trial.experiment_id.in_(experiment_ids),
            MetricRollup.level == COARSEST,
            MetricRollup.name != "",
        )
        .distinct()
    )
    found: dict[str, set[str]] = {}
    for group, name in rows:
        found.setdefault(group, set()).add(name)
    return found


def _reports(experiment_id: int, group: str, after_id: int) -> Any:
    return (
        select(Metric.id, Metric.trial_id, Metric.total_batches, Metric.metrics)
        .join(Trial, Trial.id == Metric.trial_id)
        .where(
            Trial.experiment_id == experiment_id,
            Metric.group == group,
            Metric.archived.is_(False),
            Metric.id > after_id,
        )
        .order_by(Metric.id)
        .limit(ROUND_ROWS)
    )


async def metric_batches(
    session: AsyncSession, experiment_id: int, group: str, name: str, after_id: int
) -> tuple[list[int], int]:
    """The steps of the reports after `after_id` that carry `name`, and the last id read."""
    steps: list[int] = []
    last = after_id
    for row_id, _trial, batches, values in await session.execute(
        _reports(experiment_id, group, after_id)
    ):
        last = row_id
        if name in ((values or {}).get("avg_metrics") or {}):
            steps.append(batches)
    return steps, last


@dataclass(frozen=True)
class SnapshotRow:
    trial_id: int
    batches: int
    value: float


async def snapshot(
    session: AsyncSession,
    experiment_id: int,
    group: str,
    name: str,
    window: tuple[int, int],
    after_id: int,
) -> tuple[list[SnapshotRow], dict[int, dict[str, Any]], int]:
    """The reports after `after_id` in the step window with a number for `name`, the
    hyperparameters of their trials, and the last id read."""
    low, high = window
    query = _reports(experiment_id, group, after_id).where(
        Metric.total_batches >= low, Metric.total_batches <= high
    )
    rows: list[SnapshotRow] = []
    last = after_id
    for row_id, trial_id, batches, values in await session.execute(query):
        last = row_id
        value = _number(((values or {}).get("avg_metrics") or {}).get(name))
        if value is not None:
            rows.append(SnapshotRow(trial_id, batches, value))
    return rows, await hparams(session, {r.trial_id for r in rows}), last


async def hparams(session: AsyncSession, trial_ids: set[int]) -> dict[int, dict[str, Any]]:
    if not trial_ids:
        return {}
    rows = await session.execute(select(Trial.id, Trial.hparams).where(Trial.id.in_(trial_ids)))
    return {trial_id: dict(h or {}) for trial_id, h in rows}


async def standings(session: AsyncSession, experiment_id: int) -> list[TrialStanding]:
    rows = await session.execute(
        select(Trial.id, Trial.best_searcher_metric, Trial.total_batches).where(
            Trial.experiment_id == experiment_id
        )
    )
    return [TrialStanding(t, best, batches or 0) for t, best, batches in rows]


async def trial_points(
    session: AsyncSession,
    trial_id: int,
    group: str,
    name: str,
    window: tuple[int, int],
    max_points: int,
) -> list[metric_series.Point]:
    """The trial's points of `name` in the window, reduced to about `max_points` as the
    charts' series are (`services.metric_series`)."""
    low, high = window
    points = await metric_series.series(
        session, trial_id, group, [name], lo=low, hi=high, max_points=max_points
    )
    return [p for p in points if name in p.values]
