"""Trials: reads, workloads, logs, and what the running trial reports (Core API)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from litestar import get, post
from litestar.params import FromQuery, JSONBody, Parameter, QueryParameter
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32, Limit, Offset, OrderBy, clamp_limit, is_desc
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.experiments import TrialResponse, WorkloadsResponse
from controlplane.api.schemas.reports import (
    CheckpointsResponse,
    EarlyExitRequest,
    Empty,
    ProgressRequest,
    ReportMetricsBatchRequest,
    ReportMetricsRequest,
    RunnerMetadataRequest,
    RunPrepareRequest,
    RunPrepareResponse,
    TrainingMetricsRequest,
    ValidationMetricsRequest,
)
from controlplane.api.schemas.run_metadata import (
    PostRunMetadataRequest,
    PostWebhookEventDataRequest,
    RunMetadataResponse,
)
from controlplane.api.serializers import checkpoint_out, trial_out, workload_out
from controlplane.api.streams import stream_logs, trial_log_entry
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.states import RunState
from controlplane.services import checkpoints, experiment_control, logs, run_metadata, trials

StrList = Annotated[list[str] | None, Parameter()]


@get("/api/v1/trials/{trial_id:int}")
async def get_trial(db: Db, principal: Caller, trial_id: Id32) -> TrialResponse:
    t = await trials.get_trial(db, trial_id)
    return TrialResponse(
        trial=trial_out(
            t,
            latest_validation=await trials.latest_metric(db, t.id, "validation"),
            latest_training=await trials.latest_metric(db, t.id, "training"),
            best_validation=await trials.best_validation_metric(db, t),
        )
    )


@get("/api/v1/trials/{trial_id:int}/workloads")
async def get_workloads(
    db: Db,
    principal: Caller,
    trial_id: Id32,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    filter_option: Annotated[str, QueryParameter(name="filter")] = ("FILTER_OPTION_UNSPECIFIED"),
    include_batch_metrics: Annotated[bool, QueryParameter(name="includeBatchMetrics")] = False,
) -> WorkloadsResponse:
    items = await trials.workloads(
        db, trial_id, filter_option=filter_option, descending=is_desc(order_by)
    )
    page = clamp_limit(limit, default=1000)
    chunk = items[offset:] if page < 0 else items[offset : offset + page]
    out = [workload_out(w) for w in chunk]
    if not include_batch_metrics:
        for w in out:
            for block in (w.training, w.validation):
                if block is not None:
                    block.metrics.batch_metrics = None
    return WorkloadsResponse(
        workloads=out, pagination=Pagination.of(offset, page, len(chunk), len(items))
    )


@get("/api/v1/trials/{trial_id:int}/checkpoints")
async def trial_checkpoints(db: Db, principal: Caller, trial_id: Id32) -> CheckpointsResponse:
    await trials.get_trial(db, trial_id)
    rows = await checkpoints.list_for_trial(db, trial_id)
    return CheckpointsResponse(
        checkpoints=[checkpoint_out(await checkpoints.view(db, c)) for c in rows],
        pagination=Pagination.of(0, 0, len(rows), len(rows)),
    )


@get("/api/v1/trials/{trial_id:int}/logs", media_type="application/x-ndjson")
async def trial_logs(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    trial_id: Id32,
    follow: FromQuery[bool] = False,
    limit: Annotated[int, Parameter(ge=0, le=2**31 - 1)] = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    levels: StrList = None,
    rank_ids: Annotated[list[int] | None, QueryParameter(name="rankIds")] = None,
    agent_ids: Annotated[list[str] | None, QueryParameter(name="agentIds")] = None,
    container_ids: Annotated[list[str] | None, QueryParameter(name="containerIds")] = None,
    stdtypes: StrList = None,
    sources: StrList = None,
    search_text: Annotated[str | None, QueryParameter(name="searchText")] = None,
    timestamp_before: Annotated[datetime | None, QueryParameter(name="timestampBefore")] = None,
    timestamp_after: Annotated[datetime | None, QueryParameter(name="timestampAfter")] = None,
) -> Stream:
    t = await trials.get_trial(db, trial_id)
    for rank in rank_ids or []:
        if not 0 <= rank <= 2**31 - 1:
            raise InvalidArgument(f"rank id {rank} is out of range")
    query = logs.LogQuery(
        task_id=t.task_id,
        limit=limit,
        descending=is_desc(order_by),
        levels=tuple(levels or ()),
        rank_ids=tuple(rank_ids or ()),
        agent_ids=tuple(agent_ids or ()),
        container_ids=tuple(container_ids or ()),
        stdtypes=tuple(stdtypes or ()),
        sources=tuple(sources or ()),
        search_text=search_text,
        timestamp_before=timestamp_before,
        timestamp_after=timestamp_after,
    )

    async def trial_done(session: AsyncSession) -> bool:
        current = await trials.get_trial(session, trial_id)
        return RunState(current.state).is_terminal

    return Stream(
        stream_logs(
            ctx.sessionmaker,
            query,
            lambda row: trial_log_entry(row, trial_id),
            follow=follow,
            is_done=trial_done,
        ),
        media_type="application/x-ndjson",
    )


def _metrics_report(data: ReportMetricsRequest, trial_id: int) -> trials.MetricsReport:
    body = data.metrics
    if body.trial_id not in (None, 0, trial_id):
        raise InvalidArgument(f"metrics.trialId {body.trial_id} does not match the path {trial_id}")
    raw = body.metrics
    avg = raw.get("avgMetrics", raw.get("avg_metrics"))
    batches = raw.get("batchMetrics", raw.get("batch_metrics"))
    if not isinstance(avg, dict):
        raise InvalidArgument("metrics.metrics.avgMetrics must be an object")
    if batches is not None and not (
        isinstance(batches, list) and all(isinstance(b, dict) for b in batches)
    ):
        raise InvalidArgument("metrics.metrics.batchMetrics must be a list of objects")
    return trials.MetricsReport(
        group=data.group,
        steps_completed=body.steps_completed,
        trial_run_id=body.trial_run_id,
        avg_metrics=avg,
        batch_metrics=batches,
        report_time=body.report_time,
    )


@post("/api/v1/trials/{trial_id:int}/metrics", status_code=200)
async def report_metrics(
    data: JSONBody[ReportMetricsRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    trial_id: Id32,
) -> Empty:
    report = _metrics_report(data, trial_id)
    await trials.report_metrics(db, principal, trial_id, report, ctx.clock())
    return Empty()


@post("/api/v1/trials/{trial_id:int}/training_metrics", status_code=200)
async def report_training_metrics(
    data: JSONBody[TrainingMetricsRequest], db: Db, principal: Caller, ctx: Ctx, trial_id: Id32
) -> Empty:
    """Determined's older ReportTrialTrainingMetrics: the "training" group of POST …/metrics."""
    body = ReportMetricsRequest(group="training", metrics=data.training_metrics)
    report = _metrics_report(body, trial_id)
    await trials.report_metrics(db, principal, trial_id, report, ctx.clock())
    return Empty()


@post("/api/v1/trials/{trial_id:int}/validation_metrics", status_code=200)
async def report_validation_metrics(
    data: JSONBody[ValidationMetricsRequest], db: Db, principal: Caller, ctx: Ctx, trial_id: Id32
) -> Empty:
    """Determined's older ReportTrialValidationMetrics: the "validation" group."""
    body = ReportMetricsRequest(group="validation", metrics=data.validation_metrics)
    report = _metrics_report(body, trial_id)
    await trials.report_metrics(db, principal, trial_id, report, ctx.clock())
    return Empty()


@post("/api/v1/trials/{trial_id:int}/metrics/batch", status_code=200)
async def report_metrics_batch(
    data: JSONBody[ReportMetricsBatchRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    trial_id: Id32,
) -> Empty:
    """Several reports of one trial in one request and one transaction (Resolute's harness
    sends what it queued this way); each is stored as ``POST …/metrics`` would store it."""
    reports = []
    for index, item in enumerate(data.reports):
        try:
            reports.append(_metrics_report(item, trial_id))
        except InvalidArgument as exc:
            raise InvalidArgument(f"reports[{index}]: {exc}") from None
    await trials.report_metrics_batch(db, principal, trial_id, reports, ctx.clock())
    return Empty()


@post("/api/v1/trials/{trial_id:int}/progress", status_code=200)
async def report_progress(
    data: JSONBody[ProgressRequest], db: Db, principal: Caller, ctx: Ctx, trial_id: Id32
) -> Empty:
    await trials.set_progress(db, principal, trial_id, data.progress, ctx.clock())
    return Empty()


@post("/api/v1/trials/{trial_id:int}/runner/metadata", status_code=200)
async def runner_metadata(
    data: JSONBody[RunnerMetadataRequest], db: Db, principal: Caller, trial_id: Id32
) -> Empty:
    await trials.set_runner_state(db, principal, trial_id, data.state)
    return Empty()


@post("/api/v1/trials/{trial_id:int}/early_exit", status_code=200)
async def early_exit(
    data: JSONBody[EarlyExitRequest], db: Db, principal: Caller, ctx: Ctx, trial_id: Id32
) -> Empty:
    await trials.report_early_exit(db, principal, trial_id, data.reason, ctx.clock())
    return Empty()


@post("/api/v1/trials/{trial_id:int}/kill", status_code=200)
async def kill_trial(db: Db, principal: Caller, ctx: Ctx, trial_id: Id32) -> Empty:
    """Determined's KillTrial: the trial's containers are killed; it ends CANCELED."""
    await experiment_control.kill_trial(db, principal.user, trial_id, ctx.clock())
    return Empty()


@post("/api/v1/runs/start", status_code=200)
async def run_prepare(
    data: JSONBody[RunPrepareRequest], db: Db, principal: Caller
) -> RunPrepareResponse:
    """The Core API announces a run and gets its checkpoint storage's id.

    Storage configs are not kept in a table of their own: an experiment has exactly one, so the
    experiment id is a stable id for it. The client echoes it in checkpoint reports' storageId.
    """
    trial = await trials.trial_for_write(db, principal, data.run_id)
    return RunPrepareResponse(storage_id=trial.experiment_id)


@post("/api/v1/runs/{run_id:int}/metadata", status_code=200)
async def post_run_metadata(
    data: JSONBody[PostRunMetadataRequest], db: Db, principal: Caller, run_id: Id32
) -> RunMetadataResponse:
    """Merge into the run's (trial's) metadata, nested objects key by key; answer the result."""
    if data.run_id not in (None, 0, run_id):
        raise InvalidArgument(f"runId {data.run_id} does not match the path {run_id}")
    merged = await run_metadata.set_metadata(db, principal, run_id, data.metadata)
    return RunMetadataResponse(metadata=merged)


@get("/api/v1/runs/{run_id:int}/metadata")
async def get_run_metadata(db: Db, principal: Caller, run_id: Id32) -> RunMetadataResponse:
    return RunMetadataResponse(metadata=await run_metadata.get_metadata(db, principal, run_id))


@post("/api/v1/webhooks/custom", status_code=200)
async def post_alert(
    data: JSONBody[PostWebhookEventDataRequest], db: Db, principal: Caller, ctx: Ctx
) -> Empty:
    """Context.alert: fires the CUSTOM webhook triggers, and becomes a line of the trial's log."""
    await run_metadata.alert(
        db,
        principal,
        experiment_id=data.experiment_id,
        trial_id=data.trial_id,
        title=data.data.title or "",
        description=data.data.description or "",
        level=data.data.level,
        now=ctx.clock(),
    )
    return Empty()


ROUTES = [
    get_trial,
    get_workloads,
    trial_checkpoints,
    trial_logs,
    report_metrics,
    report_metrics_batch,
    report_training_metrics,
    report_validation_metrics,
    report_progress,
    runner_metadata,
    early_exit,
    kill_trial,
    run_prepare,
    post_run_metadata,
    get_run_metadata,
    post_alert,
]
