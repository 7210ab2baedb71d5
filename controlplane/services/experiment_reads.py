"""Reads of one experiment's stored data for Determined's experiment views: its validation
history, its context directory's files. The deciding is pure (`domain.validation_history`,
`domain.model_def_tree`); this module fetches the rows."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import ExperimentContext, Metric, Trial
from controlplane.domain import limits
from controlplane.domain.context_archive import ContextArchiveError, read_members
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.model_def_tree import Member
from controlplane.domain.validation_history import Validation, improving
from controlplane.services.experiments import get_experiment


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


async def validation_history(session: AsyncSession, experiment_id: int) -> list[Validation]:
    """The validations that improved the experiment's best searcher metric, oldest first."""
    exp = await get_experiment(session, experiment_id)
    searcher = exp.config.get("searcher") or {}
    metric = searcher.get("metric")
    if not metric:
        return []
    rows = await session.execute(
        select(Metric.trial_id, Metric.end_time, Metric.metrics)
        .join(Trial, Trial.id == Metric.trial_id)
        .where(
            Trial.experiment_id == experiment_id,
            Metric.group == "validation",
            Metric.archived.is_(False),
        )
    )
    found = [
        Validation(trial_id, end, _number(((values or {}).get("avg_metrics") or {}).get(metric)))
        for trial_id, end, values in rows
    ]
    return improving(found, smaller_is_better=bool(searcher.get("smaller_is_better", True)))


async def context_members(session: AsyncSession, experiment_id: int) -> list[Member]:
    """The files and directories of the experiment's stored context (none: an empty list)."""
    await get_experiment(session, experiment_id)
    ctx = await session.get(ExperimentContext, experiment_id)
    if ctx is None:
        return []
    try:
        members = read_members(ctx.archive)
    except ContextArchiveError as exc:  # stored by us, so only a damaged row gets here
        raise InvalidArgument(
            f"experiment {experiment_id}'s context cannot be read: {exc}"
        ) from None
    return [Member(path, is_dir, mtime, data) for path, is_dir, _mode, mtime, data in members]


def check_path(path: str) -> str:
    if not path or len(path) > limits.PATH_CHARS or "\x00" in path:
        raise InvalidArgument(f"path must be 1 to {limits.PATH_CHARS} characters without NUL")
    return path
