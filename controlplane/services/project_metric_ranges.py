"""The range of every numeric metric across a project's experiments (Determined's
GetProjectNumericMetricsRange, what its experiment table's column filters read): per metric,
named "group.name" as Determined's columns are, the least and greatest value reported.

Read from the metric rollups' coarsest level (`domain.series_rollup`), which hold every
reported point's minimum and maximum per bucket, so a project with long trials costs a few
rows per trial and metric rather than every report.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Experiment, MetricRollup, Trial
from controlplane.domain.series_rollup import COARSEST
from controlplane.services.workspaces import get_project


@dataclass(frozen=True)
class MetricRange:
    name: str
    min: float
    max: float


async def numeric_ranges(session: AsyncSession, project_id: int) -> list[MetricRange]:
    await get_project(session, project_id)
    rows = await session.execute(
        select(
            MetricRollup.group,
            MetricRollup.name,
            func.min(MetricRollup.min_value),
            func.max(MetricRollup.max_value),
        )
        .join(Trial, Trial.id == MetricRollup.trial_id)
        .join(Experiment, Experiment.id == Trial.experiment_id)
        .where(
            Experiment.project_id == project_id,
            MetricRollup.level == COARSEST,
            MetricRollup.name != "",
        )
        .group_by(MetricRollup.group, MetricRollup.name)
        .order_by(MetricRollup.group, MetricRollup.name)
    )
    return [
        MetricRange(f"{group}.{name}", float(lo), float(hi))
        for group, name, lo, hi in rows
        if lo is not None and hi is not None
    ]
