"""GET /api/v1/trials/time-series (Determined's CompareTrials): metric series of several trials,
reduced on the server to what a chart can draw (`domain.series_reduction`).

`maxDatapoints` is the number of points the caller can show; the series keeps min, max and last
of each of `maxDatapoints / 3` step buckets per metric, and every point when the window
[`startBatches`, `endBatches`] holds no more than `maxDatapoints`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import get
from litestar.params import FromQuery, QueryParameter
from sqlalchemy import select

from controlplane.api.deps import Caller, Db
from controlplane.api.params import check_ids
from controlplane.api.schemas.common import Wire
from controlplane.api.schemas.experiments import TrialOut
from controlplane.api.serializers import trial_out
from controlplane.db.models import Metric, Trial
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.series_reduction import MAX_BUCKETS, POINTS_PER_BUCKET, reduce_many
from controlplane.services import trials

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


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


async def _series(
    db: Db, trial_id: int, group: str, names: list[str], lo: int | None, hi: int | None, points: int
) -> list[DataPoint]:
    query = select(Metric.total_batches, Metric.end_time, Metric.metrics).where(
        Metric.trial_id == trial_id, Metric.group == group, Metric.archived.is_(False)
    )
    if lo is not None:
        query = query.where(Metric.total_batches >= lo)
    if hi is not None:
        query = query.where(Metric.total_batches <= hi)
    rows = (await db.execute(query.order_by(Metric.total_batches, Metric.id))).all()
    steps = [r[0] for r in rows]
    avgs = [(r[2] or {}).get("avg_metrics") or {} for r in rows]
    wanted = names or sorted({k for a in avgs for k in a})
    columns = [[_number(a.get(n)) for a in avgs] for n in wanted]
    buckets = max(1, points // POINTS_PER_BUCKET)
    kept = reduce_many(steps, columns, buckets=buckets) if rows else []
    return [
        DataPoint(
            batches=steps[i],
            time=rows[i][1]
            .astimezone(UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            epoch=_number(avgs[i].get("epoch")),
            values={n: avgs[i][n] for n in wanted if n in avgs[i]},
        )
        for i in kept
    ]


@get("/api/v1/trials/time-series")
async def compare_trials(
    db: Db,
    principal: Caller,
    trial_ids: Annotated[list[int] | None, QueryParameter(name="trialIds")] = None,
    metric_names: Annotated[list[str] | None, QueryParameter(name="metricNames")] = None,
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
    chosen = group or METRIC_TYPES.get(metric_type or "", "training")
    trials.check_group(chosen)
    await trials.require_trials(db, ids)
    rows = {t.id: t for t in await db.scalars(select(Trial).where(Trial.id.in_(ids)))}
    points = max_datapoints or 1500
    out = []
    for trial_id in ids:
        data = await _series(db, trial_id, chosen, names, start_batches, end_batches, points)
        kind = next((k for k, v in METRIC_TYPES.items() if v == chosen), "METRIC_TYPE_UNSPECIFIED")
        out.append(
            ComparableTrial(
                trial=trial_out(rows[trial_id]),
                metrics=[DownsampledMetrics(data=data, group=chosen, type=kind)],
            )
        )
    return CompareTrialsResponse(trials=out)


ROUTES = [compare_trials]
