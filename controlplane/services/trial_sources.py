"""Determined's TrialSourceInfo: a task records the checkpoint (and model version) it used,
and the metrics it reports are then found from that checkpoint or model version.

A trial's own token may report for its trial only; a user for a trial of an experiment they
own (or an admin), as for any report to a trial. The reads show the reports of trials the
caller may view (under RBAC, those in workspaces where it holds the view permission).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Checkpoint, Experiment, Metric, ModelVersion, Trial
from controlplane.db.models.trial_sources import TrialSourceInfo
from controlplane.domain import checkpoint_refs
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.rbac import Permission
from controlplane.services import rbac_scopes
from controlplane.services.principals import Principal
from controlplane.services.trials import check_group, trial_for_write

TYPES = (
    "TRIAL_SOURCE_INFO_TYPE_UNSPECIFIED",
    "TRIAL_SOURCE_INFO_TYPE_INFERENCE",
    "TRIAL_SOURCE_INFO_TYPE_FINE_TUNING",
)
# Reports answered at most: the reads are not paged, as Determined's are not.
MAX_REPORTS = 100_000


@dataclass(frozen=True)
class SourceReport:
    trial_id: int
    checkpoint_uuid: str
    source_type: str
    model_id: int | None = None
    model_version: int | None = None


def check_type(source_type: str | None) -> None:
    if source_type is not None and source_type not in TYPES:
        raise InvalidArgument(f"trialSourceInfoType must be one of {', '.join(TYPES)}")


async def report(session: AsyncSession, principal: Principal, r: SourceReport) -> None:
    """Record (or update) which checkpoint and model version the trial used."""
    checkpoint_refs.check_uuid(r.checkpoint_uuid)
    check_type(r.source_type)
    await trial_for_write(session, principal, r.trial_id)
    if await session.get(Checkpoint, r.checkpoint_uuid) is None:
        raise NotFound(f"checkpoint {r.checkpoint_uuid} not found")
    if (r.model_id is None) != (r.model_version is None):
        raise InvalidArgument("modelId and modelVersion are given together or not at all")
    if r.model_id is not None:
        found = await session.scalar(
            select(ModelVersion.id).where(
                ModelVersion.model_id == r.model_id, ModelVersion.version == r.model_version
            )
        )
        if found is None:
            raise NotFound(f"model {r.model_id} has no version {r.model_version}")
    row = await session.get(TrialSourceInfo, (r.trial_id, r.checkpoint_uuid))
    if row is None:
        row = TrialSourceInfo(trial_id=r.trial_id, checkpoint_uuid=r.checkpoint_uuid)
        session.add(row)
    row.source_type = r.source_type
    row.model_id = r.model_id
    row.model_version = r.model_version
    await session.flush()


async def metrics_of_sources(
    session: AsyncSession,
    principal: Principal,
    where: list[Any],
    *,
    group: str | None,
    source_type: str | None,
) -> list[Metric]:
    """The live reports of the trials whose source rows match `where` (and the type), in the
    group given (None or "": every group), of trials the caller may view."""
    check_type(source_type)
    if group:
        check_group(group)
    sources = select(TrialSourceInfo.trial_id).where(*where)
    if source_type is not None:
        sources = sources.where(TrialSourceInfo.source_type == source_type)
    visible = principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA)
    query = (
        select(Metric)
        .join(Trial, Trial.id == Metric.trial_id)
        .join(Experiment, Experiment.id == Trial.experiment_id)
        .where(
            Metric.trial_id.in_(sources),
            Metric.archived.is_(False),
            rbac_scopes.experiments_in(visible),
        )
        .order_by(Metric.trial_id, Metric.total_batches, Metric.id)
        .limit(MAX_REPORTS)
    )
    if group:
        query = query.where(Metric.group == group)
    return list(await session.scalars(query))
