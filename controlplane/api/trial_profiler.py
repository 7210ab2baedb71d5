"""Determined's profiler routes: GetTrialProfilerAvailableSeries and GetTrialProfilerMetrics,
NDJSON streams (`{"result": …}` per line) over the system metrics a trial's profiler reported
(domain.profiler_series). `follow=true` is answered with what is stored now, then the stream
ends; the client's next call reads what came since."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from litestar import get
from litestar.params import FromQuery, QueryParameter
from litestar.response import Stream
from sqlalchemy import select

from controlplane.api.deps import Caller, Db
from controlplane.api.params import Id32
from controlplane.api.trial_metrics import NDJSON, _line, _timestamp
from controlplane.db.models import Metric
from controlplane.domain import profiler_series as ps
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.rbac import Permission
from controlplane.services import rbac_scopes, trials

MAX_REPORTS = 100_000  # ~11 days of one report per group every 10 s


async def _reports(db: Db, principal: Caller, trial_id: int) -> list[ps.Report]:
    await trials.get_trial(db, trial_id)
    visible = principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA)
    await rbac_scopes.require_trials_in(db, [trial_id], visible)
    rows = await db.execute(
        select(Metric.group, Metric.total_batches, Metric.end_time, Metric.metrics)
        .where(
            Metric.trial_id == trial_id,
            Metric.group.in_(ps.GROUPS),
            Metric.archived.is_(False),
        )
        .order_by(Metric.end_time, Metric.id)
        .limit(MAX_REPORTS)
    )
    return [
        ps.Report(group, steps, at, (stored or {}).get("avg_metrics") or {})
        for group, steps, at, stored in rows.all()
    ]


async def _lines(items: list[dict[str, Any]]) -> AsyncIterator[bytes]:
    for item in items:
        yield _line({"result": item})


@get("/api/v1/trials/{trial_id:int}/profiler/available_series", media_type=NDJSON)
async def available_series(
    db: Db, principal: Caller, trial_id: Id32, follow: FromQuery[bool] = False
) -> Stream:
    """The labels of every system-metrics series the trial has."""
    found = ps.series(await _reports(db, principal, trial_id))
    labels = [s.label.wire(trial_id) for s in found]
    return Stream(_lines([{"labels": labels}]), media_type=NDJSON)


@get("/api/v1/trials/{trial_id:int}/profiler/metrics", media_type=NDJSON)
async def profiler_metrics(
    db: Db,
    principal: Caller,
    trial_id: Id32,
    follow: FromQuery[bool] = False,
    name: Annotated[str | None, QueryParameter(name="labels.name", max_length=256)] = None,
    agent_id: Annotated[str | None, QueryParameter(name="labels.agentId", max_length=256)] = None,
    gpu_uuid: Annotated[str | None, QueryParameter(name="labels.gpuUuid", max_length=256)] = None,
    metric_type: Annotated[
        str | None, QueryParameter(name="labels.metricType", max_length=256)
    ] = None,
) -> Stream:
    """One batch per series matching the labels given: its values, steps and times."""
    if metric_type not in (None, "", ps.SYSTEM):
        raise InvalidArgument(
            f"labels.metricType {metric_type!r}: this master records only {ps.SYSTEM} metrics"
        )
    wanted = ps.Label(name or "", agent_id or "", gpu_uuid or "")
    found = ps.series(await _reports(db, principal, trial_id), wanted)
    batches = [
        {
            "batch": {
                "values": s.values,
                "batches": s.batches,
                "timestamps": [_timestamp(t) for t in s.timestamps],
                "labels": s.label.wire(trial_id),
            }
        }
        for s in found
    ]
    return Stream(_lines(batches), media_type=NDJSON)


ROUTES = [available_series, profiler_metrics]
