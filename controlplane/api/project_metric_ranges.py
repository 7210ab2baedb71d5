"""GET /api/v1/projects/{id}/experiments/metric-ranges (GetProjectNumericMetricsRange)."""

from __future__ import annotations

from litestar import get

from controlplane.api.deps import Caller, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.common import Wire
from controlplane.services import project_metric_ranges


class MetricsRangeOut(Wire):
    metrics_name: str
    min: float
    max: float


class ProjectNumericMetricsRangeResponse(Wire):
    ranges: list[MetricsRangeOut]


@get("/api/v1/projects/{project_id:int}/experiments/metric-ranges")
async def metric_ranges(
    db: Db, principal: Caller, project_id: Id32
) -> ProjectNumericMetricsRangeResponse:
    found = await project_metric_ranges.numeric_ranges(db, project_id)
    return ProjectNumericMetricsRangeResponse(
        ranges=[MetricsRangeOut(metrics_name=r.name, min=r.min, max=r.max) for r in found]
    )


ROUTES = [metric_ranges]
