"""Checkpoints: reported by tasks, read by users, marked deleted by GC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Checkpoint, Experiment, Metric, Trial
from controlplane.domain import checkpoint_refs, limits
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied
from controlplane.services.dialect import insert_ignoring_duplicates
from controlplane.services.principals import Principal
from controlplane.services.trials import trial_for_write

STATES = {
    "STATE_UNSPECIFIED",
    "STATE_ACTIVE",
    "STATE_COMPLETED",
    "STATE_ERROR",
    "STATE_DELETED",
    "STATE_PARTIALLY_DELETED",
}


@dataclass(frozen=True)
class CheckpointReport:
    uuid: str
    state: str
    resources: dict[str, Any]
    metadata: dict[str, Any]
    trial_id: int | None
    task_id: str | None
    allocation_id: str | None
    report_time: datetime | None
    storage_id: int | None


def _steps(metadata: dict[str, Any]) -> int:
    value = metadata.get("steps_completed", 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
        raise InvalidArgument(
            "checkpoint metadata.steps_completed must be an integer from 0 to 2147483647"
        )
    return value


async def _resolve_trial(
    session: AsyncSession, principal: Principal, report: CheckpointReport
) -> int | None:
    trial_id = report.trial_id
    task_id = report.task_id or principal.task_id
    if trial_id is None and task_id:
        trial_id = await session.scalar(select(Trial.id).where(Trial.task_id == task_id))
    if trial_id is None:
        if not principal.user.admin:
            raise InvalidArgument("a checkpoint must name the trial (training.trialId) or task")
        return None
    await trial_for_write(session, principal, trial_id)
    return trial_id


async def report_checkpoint(
    session: AsyncSession, principal: Principal, report: CheckpointReport, now: datetime
) -> None:
    """Idempotent by uuid: a retried report changes nothing."""
    if report.state not in STATES:
        raise InvalidArgument(f"unknown checkpoint state '{report.state}'")
    checkpoint_refs.check_uuid(report.uuid)
    resources = checkpoint_refs.check_resources(report.resources)
    limits.check_json_size("checkpoint metadata", report.metadata, limits.CHECKPOINT_METADATA_BYTES)
    steps = _steps(report.metadata)
    trial_id = await _resolve_trial(session, principal, report)
    stmt = insert_ignoring_duplicates(session, Checkpoint, ["uuid"]).values(
        uuid=report.uuid,
        task_id=report.task_id or principal.task_id,
        allocation_id=report.allocation_id
        or (principal.allocation.allocation_id if principal.allocation else None),
        trial_id=trial_id,
        state=report.state.removeprefix("STATE_"),
        report_time=report.report_time or now,
        resources=resources,
        metadata_=report.metadata,
        steps_completed=steps,
        storage_id=report.storage_id,
    )
    await session.execute(stmt)


async def get_checkpoint(session: AsyncSession, uuid: str) -> Checkpoint:
    ckpt = await session.get(Checkpoint, uuid)
    if ckpt is None:
        raise NotFound(f"checkpoint {uuid} not found")
    return ckpt


async def mark_deleted(
    session: AsyncSession, principal: Principal, updates: list[tuple[str, dict[str, Any] | None]]
) -> None:
    """PATCH /checkpoints: new resources after a (partial) delete; empty resources = deleted."""
    for uuid, resources in updates:
        ckpt = await get_checkpoint(session, uuid)
        if ckpt.trial_id is not None:
            await trial_for_write(session, principal, ckpt.trial_id)
        elif principal.allocation is not None or not principal.user.admin:
            # Only an admin may report one that names no trial, so only an admin owns it.
            raise PermissionDenied(f"only an admin may change checkpoint {uuid}")
        if resources is None:
            continue
        ckpt.resources = checkpoint_refs.check_resources(resources)
        ckpt.state = "DELETED" if not resources else "PARTIALLY_DELETED"


SORT = {
    "SORT_BY_UNSPECIFIED": Checkpoint.report_time,
    "SORT_BY_END_TIME": Checkpoint.report_time,
    "SORT_BY_UUID": Checkpoint.uuid,
    "SORT_BY_TRIAL_ID": Checkpoint.trial_id,
    "SORT_BY_BATCH_NUMBER": Checkpoint.steps_completed,
    "SORT_BY_STATE": Checkpoint.state,
}


async def list_for_experiment(
    session: AsyncSession,
    experiment_id: int,
    *,
    states: tuple[str, ...],
    sort_by: str,
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[list[Checkpoint], int]:
    if await session.get(Experiment, experiment_id) is None:
        raise NotFound(f"experiment {experiment_id} not found")
    base = (
        select(Checkpoint)
        .join(Trial, Trial.id == Checkpoint.trial_id)
        .where(Trial.experiment_id == experiment_id)
    )
    if states:
        base = base.where(Checkpoint.state.in_([s.removeprefix("STATE_") for s in states]))
    total = await session.scalar(select(func.count()).select_from(base.subquery())) or 0
    if sort_by == "SORT_BY_SEARCHER_METRIC":
        rows = await _by_searcher_metric(session, experiment_id, base, descending)
        return rows[offset : offset + limit if limit > 0 else None], total
    column = SORT.get(sort_by, Checkpoint.report_time)
    query = base.order_by(column.desc() if descending else column.asc(), Checkpoint.uuid)
    query = query.offset(offset)
    if limit > 0:
        query = query.limit(limit)
    return list(await session.scalars(query)), total


async def _by_searcher_metric(
    session: AsyncSession, experiment_id: int, base: Any, descending: bool
) -> list[Checkpoint]:
    """Best first (`det experiment list-checkpoints --best N`); descending = worst first. One
    without a validation at its steps comes last either way."""
    exp = await session.get(Experiment, experiment_id)
    searcher = ((exp.config if exp else None) or {}).get("searcher") or {}
    name, smaller = searcher.get("metric"), searcher.get("smaller_is_better", True) is not False
    values: dict[tuple[int, int], float] = {}
    if name:
        rows = await session.execute(
            select(Metric.trial_id, Metric.total_batches, Metric.metrics)
            .join(Trial, Trial.id == Metric.trial_id)
            .where(
                Trial.experiment_id == experiment_id,
                Metric.group == "validation",
                Metric.archived.is_(False),
            )
            .order_by(Metric.id)
        )
        for trial_id, steps, body in rows:
            value = ((body or {}).get("avg_metrics") or {}).get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                values[(trial_id, steps)] = float(value)
    sign = (1.0 if smaller else -1.0) * (-1.0 if descending else 1.0)

    def key(c: Checkpoint) -> tuple[bool, float, str]:
        value = values.get((c.trial_id or 0, c.steps_completed))
        return (value is None, sign * value if value is not None else 0.0, c.uuid)

    return sorted(await session.scalars(base), key=key)


async def list_for_trial(session: AsyncSession, trial_id: int) -> list[Checkpoint]:
    return list(
        await session.scalars(
            select(Checkpoint)
            .where(Checkpoint.trial_id == trial_id)
            .order_by(Checkpoint.steps_completed, Checkpoint.uuid)
        )
    )


@dataclass(frozen=True)
class CheckpointView:
    """A checkpoint with what `det checkpoint describe` shows beside it."""

    checkpoint: Checkpoint
    trial: Trial | None
    experiment_config: dict[str, Any] | None
    validation: Metric | None


async def view(session: AsyncSession, ckpt: Checkpoint) -> CheckpointView:
    if ckpt.trial_id is None:
        return CheckpointView(ckpt, None, None, None)
    trial = await session.get(Trial, ckpt.trial_id)
    config = await session.scalar(
        select(Experiment.config).where(Experiment.id == trial.experiment_id) if trial else None
    )
    validation = await session.scalar(
        select(Metric)
        .where(
            Metric.trial_id == ckpt.trial_id,
            Metric.group == "validation",
            Metric.total_batches == ckpt.steps_completed,
            Metric.archived.is_(False),
        )
        .order_by(Metric.id.desc())
        .limit(1)
    )
    return CheckpointView(ckpt, trial, config, validation)
