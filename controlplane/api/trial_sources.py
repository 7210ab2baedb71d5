"""Determined's trial source infos: POST /api/v1/trial-source-info (ReportTrialSourceInfo, what
`core_context.experimental.report_task_using_checkpoint`/`_model_version` send), and the
metrics reported by the trials that used a checkpoint (GET /api/v1/checkpoints/{uuid}/metrics,
the SDK's `Checkpoint.get_metrics`) or a model version (GET /api/v1/models/{name}/versions/
{n}/metrics, `ModelVersion.get_metrics`): `{"metrics": [MetricsReport, ...]}`."""

from __future__ import annotations

from typing import Annotated

from litestar import get, post
from litestar.params import JSONBody, Parameter, QueryParameter
from pydantic import Field

from controlplane.api.deps import Caller, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.common import INT32_MAX, Wire
from controlplane.api.trial_metrics import metrics_report
from controlplane.db.models.trial_sources import TrialSourceInfo
from controlplane.domain import checkpoint_refs, limits
from controlplane.services import model_registry, trial_sources
from controlplane.services.checkpoints import get_checkpoint

Uuid = Annotated[str, Parameter(max_length=64)]
ModelName = Annotated[str, Parameter(max_length=limits.SHORT_NAME_CHARS)]
MetricGroup = Annotated[str | None, QueryParameter(name="metricGroup", max_length=128)]
SourceType = Annotated[str | None, QueryParameter(name="trialSourceInfoType", max_length=64)]


class TrialSourceInfoIn(Wire):
    trial_id: int = Field(ge=1, le=INT32_MAX)
    checkpoint_uuid: str = Field(max_length=64)
    trial_source_info_type: str = Field("TRIAL_SOURCE_INFO_TYPE_UNSPECIFIED", max_length=64)
    model_id: int | None = Field(None, ge=1, le=INT32_MAX)
    model_version: int | None = Field(None, ge=1, le=INT32_MAX)


class ReportTrialSourceInfoRequest(Wire):
    trial_source_info: TrialSourceInfoIn


class ReportTrialSourceInfoResponse(Wire):
    trial_id: int
    checkpoint_uuid: str


class TrialMetricsResponse(Wire):
    metrics: list[dict[str, object]]


@post("/api/v1/trial-source-info", status_code=200)
async def report_trial_source_info(
    data: JSONBody[ReportTrialSourceInfoRequest], db: Db, principal: Caller
) -> ReportTrialSourceInfoResponse:
    info = data.trial_source_info
    await trial_sources.report(
        db,
        principal,
        trial_sources.SourceReport(
            trial_id=info.trial_id,
            checkpoint_uuid=info.checkpoint_uuid,
            source_type=info.trial_source_info_type,
            model_id=info.model_id,
            model_version=info.model_version,
        ),
    )
    return ReportTrialSourceInfoResponse(
        trial_id=info.trial_id, checkpoint_uuid=info.checkpoint_uuid
    )


@get("/api/v1/checkpoints/{checkpoint_uuid:str}/metrics")
async def metrics_by_checkpoint(
    db: Db,
    principal: Caller,
    checkpoint_uuid: Uuid,
    metric_group: MetricGroup = None,
    trial_source_info_type: SourceType = None,
) -> TrialMetricsResponse:
    checkpoint_refs.check_uuid(checkpoint_uuid)
    await get_checkpoint(db, checkpoint_uuid)
    rows = await trial_sources.metrics_of_sources(
        db,
        principal,
        [TrialSourceInfo.checkpoint_uuid == checkpoint_uuid],
        group=metric_group,
        source_type=trial_source_info_type,
    )
    return TrialMetricsResponse(metrics=[metrics_report(r) for r in rows])


@get("/api/v1/models/{model_name:str}/versions/{version:int}/metrics")
async def metrics_by_model_version(
    db: Db,
    principal: Caller,
    model_name: ModelName,
    version: Id32,
    metric_group: MetricGroup = None,
    trial_source_info_type: SourceType = None,
) -> TrialMetricsResponse:
    model = await model_registry.get_model(db, model_name)
    await model_registry.get_version(db, model, version)
    rows = await trial_sources.metrics_of_sources(
        db,
        principal,
        [TrialSourceInfo.model_id == model.id, TrialSourceInfo.model_version == version],
        group=metric_group,
        source_type=trial_source_info_type,
    )
    return TrialMetricsResponse(metrics=[metrics_report(r) for r in rows])


ROUTES = [report_trial_source_info, metrics_by_checkpoint, metrics_by_model_version]
