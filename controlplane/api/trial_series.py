"""GET /api/v1/trials/time-series (Determined's CompareTrials): metric series of several trials,
reduced on the server to what a chart can draw (`domain.series_reduction`).

`maxDatapoints` is the number of points the caller can show; the series keeps min, max and last
of each of `maxDatapoints / 3` step buckets per metric, and every point when the window
[`startBatches`, `endBatches`] holds no more than `maxDatapoints`. `metricIds`
(`group.metric_name`) ask for several groups at once, one `metrics` entry per group;
`timeSeriesFilter.*` narrows the points (`domain.series_filter`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import Request, get
from litestar.params import FromQuery, QueryParameter
from sqlalchemy import select

from controlplane.api.deps import Caller, Db
from controlplane.api.params import check_ids
from controlplane.api.schemas.common import Wire
from controlplane.api.schemas.experiments import TrialOut
from controlplane.api.serializers import trial_out
from controlplane.db.models import Trial
from controlplane.domain import series_filter
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.rbac import Permission
from controlplane.domain.series_reduction import MAX_BUCKETS, POINTS_PER_BUCKET
from controlplane.services import metric_series, rbac_scopes, trials

MAX_TRIALS = 100
MAX_METRIC_NAMES = 50
METRIC_TYPES = {
    "METRIC_TYPE_TRAINING": "training",
    "METRIC_TYPE_VALIDATION": "validation",
    "METRIC_TYPE_PROFILING": "profiling",
}


class DataPoint(Wire):
    batches: int
    time: str
    epoch: float | None = None
    values: dict[str, Any]


class DownsampledMetrics(Wire):
    data: list[DataPoint]
    group: str
    type: str


class ComparableTrial(Wire):
    trial: TrialOut
    metrics: list[DownsampledMetrics]


class CompareTrialsResponse(Wire):
    trials: list[ComparableTrial]


def _stamp(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _point(p: metric_series.Point) -> DataPoint:
    return DataPoint(
        batches=p.steps,
        time=_stamp(p.time) if p.time is not None else "",
        epoch=p.epoch,
        values=p.values,
    )


@get("/api/v1/trials/time-series")
async def compare_trials(
    request: Request,
    db: Db,
    principal: Caller,
    trial_ids: Annotated[list[int] | None, QueryParameter(name="trialIds")] = None,
    metric_names: Annotated[list[str] | None, QueryParameter(name="metricNames")] = None,
    metric_ids: Annotated[list[str] | None, QueryParameter(name="metricIds")] = None,
    group: FromQuery[str | None] = None,
    metric_type: Annotated[str | None, QueryParameter(name="metricType")] = None,
    start_batches: Annotated[int | None, QueryParameter(name="startBatches", ge=0)] = None,
    end_batches: Annotated[int | None, QueryParameter(name="endBatches", ge=0)] = None,
    max_datapoints: Annotated[
        int, QueryParameter(name="maxDatapoints", ge=0, le=MAX_BUCKETS * POINTS_PER_BUCKET)
    ] = 1500,
) -> CompareTrialsResponse:
    ids = list(dict.fromkeys(trial_ids or ()))
    if not ids:
        raise InvalidArgument("must specify at least one trialId")
    if len(ids) > MAX_TRIALS:
        raise InvalidArgument(f"at most {MAX_TRIALS} trialIds may be given (got {len(ids)})")
    check_ids(*ids)
    names = list(dict.fromkeys(metric_names or ()))
    if len(names) > MAX_METRIC_NAMES:
        raise InvalidArgument(f"at most {MAX_METRIC_NAMES} metricNames may be given")
    if metric_type is not None and metric_type not in METRIC_TYPES:
        raise InvalidArgument(f"metricType must be one of {sorted(METRIC_TYPES)}")
    if len(metric_ids or ()) > MAX_METRIC_NAMES:
        raise InvalidArgument(f"at most {MAX_METRIC_NAMES} metricIds may be given")
    by_group = series_filter.metric_ids(metric_ids or (), trials.check_group)
    chosen = group or METRIC_TYPES.get(metric_type or "", "training")
    trials.check_group(chosen)
    if names or not by_group:
        by_group.setdefault(chosen, [])
        by_group[chosen] = list(dict.fromkeys([*names, *by_group[chosen]]))
    query = request.query_params
    flt = series_filter.parse(
        {k: v for k, v in query.items() if k.startswith("timeSeriesFilter.")},
        {k: query.getall(k) for k in query if k.startswith("timeSeriesFilter.integerRange.")},
    )
    lo, hi = series_filter.batch_window(flt, start_batches, end_batches)
    keep = series_filter.keeps(flt)
    await trials.require_trials(db, ids)
    visible = principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA)
    await rbac_scopes.require_trials_in(db, ids, visible)
    rows = {t.id: t for t in await db.scalars(select(Trial).where(Trial.id.in_(ids)))}
    points = max_datapoints or 1500
    out = []
    for trial_id in ids:
        metrics = []
        for chosen_group, wanted in by_group.items():
            empty = lo is not None and hi is not None and lo > hi
            found = (
                []
                if empty
                else await metric_series.series(
                    db, trial_id, chosen_group, wanted, lo=lo, hi=hi, max_points=points
                )
            )
            data = [_point(p) for p in found if keep(p.steps, p.epoch, p.time)]
            kind = next(
                (k for k, v in METRIC_TYPES.items() if v == chosen_group),
                "METRIC_TYPE_UNSPECIFIED",
            )
            metrics.append(DownsampledMetrics(data=data, group=chosen_group, type=kind))
        out.append(ComparableTrial(trial=trial_out(rows[trial_id]), metrics=metrics))
    return CompareTrialsResponse(trials=out)


ROUTES = [compare_trials]
