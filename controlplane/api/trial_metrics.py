"""Determined's metric streams: GetMetrics (any group), GetTrainingMetrics, GetValidationMetrics.

NDJSON, one `{"result": {"metrics": [MetricsReport, ...]}}` line per batch of up to
`BATCH` reports of one trial; the trials in id order, each trial's live (not archived) reports
in step order. The streams end when every trial's reports have been sent (no follow).
Every trial is checked before the first line: an unknown id is a 404, as GET /trials/{id}.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import get
from litestar.params import FromQuery, QueryParameter
from litestar.response import Stream
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import check_ids
from controlplane.db.models import Metric
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.rbac import Permission
from controlplane.services import rbac_scopes, trials
from controlplane.services.principals import Principal

log = logging.getLogger(__name__)

BATCH = 1000  # reports per line, as Determined's master sends them
MAX_TRIALS = 1000  # trial ids per request

TrialIds = Annotated[list[int] | None, QueryParameter(name="trialIds")]
NDJSON = "application/x-ndjson"


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def _timestamp(value: datetime) -> str:
    # Milliseconds, as Determined's master truncates them for its Python client.
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def metrics_report(row: Metric) -> dict[str, Any]:
    """A v1MetricsReport. `metrics` is shaped as Determined stores it, which its client reads:
    `validation_metrics` for the validation group, `avg_metrics` for every other one."""
    stored = row.metrics or {}
    key = "validation_metrics" if row.group == "validation" else "avg_metrics"
    body: dict[str, Any] = {key: stored.get("avg_metrics") or {}}
    if stored.get("batch_metrics") is not None:
        body["batch_metrics"] = stored["batch_metrics"]
    return {
        "trialId": row.trial_id,
        "endTime": _timestamp(row.end_time),
        "metrics": body,
        "totalBatches": row.total_batches,
        "archived": row.archived,
        "id": row.id,
        "trialRunId": row.trial_run_id,
        "group": row.group,
    }


async def _reports(
    sessionmaker: async_sessionmaker[AsyncSession], trial_ids: Sequence[int], group: str
) -> AsyncIterator[bytes]:
    try:
        for trial_id in trial_ids:
            after: tuple[int, int] | None = None
            while True:
                async with sessionmaker() as session:
                    rows = await trials.live_metrics_page(
                        session, trial_id, group, after=after, limit=BATCH
                    )
                if rows:
                    yield _line({"result": {"metrics": [metrics_report(r) for r in rows]}})
                if len(rows) < BATCH:
                    break
                after = (rows[-1].total_batches, rows[-1].id)
    except SQLAlchemyError as exc:
        # The status line is sent already: the error goes in the stream, as grpc-gateway's.
        log.warning("metrics stream of trials %s failed: %s", list(trial_ids), exc)
        message = "the database failed while streaming metrics; retry shortly"
        error = {"grpcCode": 14, "httpCode": 503, "httpStatus": "Unavailable", "message": message}
        yield _line({"error": error})


async def _stream(
    db: Db, ctx: Ctx, principal: Principal, trial_ids: list[int] | None, group: str
) -> Stream:
    ids = sorted(set(trial_ids or ()))
    if not ids:
        raise InvalidArgument("must specify at least one trialId")
    if len(ids) > MAX_TRIALS:
        raise InvalidArgument(f"at most {MAX_TRIALS} trialIds may be given (got {len(ids)})")
    check_ids(*ids)
    trials.check_group(group)
    await trials.require_trials(db, ids)
    visible = principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA)
    await rbac_scopes.require_trials_in(db, ids, visible)
    return Stream(_reports(ctx.sessionmaker, ids, group), media_type=NDJSON)


@get("/api/v1/trials/metrics/trial_metrics", media_type=NDJSON)
async def get_metrics(
    db: Db, principal: Caller, ctx: Ctx, group: FromQuery[str], trial_ids: TrialIds = None
) -> Stream:
    """GetMetrics: the trials' reports of `group` ("training", "validation", or any group a
    trial reported)."""
    return await _stream(db, ctx, principal, trial_ids, group)


@get("/api/v1/trials/metrics/training_metrics", media_type=NDJSON)
async def get_training_metrics(
    db: Db, principal: Caller, ctx: Ctx, trial_ids: TrialIds = None
) -> Stream:
    """GetTrainingMetrics: GetMetrics of the "training" group."""
    return await _stream(db, ctx, principal, trial_ids, "training")


@get("/api/v1/trials/metrics/validation_metrics", media_type=NDJSON)
async def get_validation_metrics(
    db: Db, principal: Caller, ctx: Ctx, trial_ids: TrialIds = None
) -> Stream:
    """GetValidationMetrics: GetMetrics of the "validation" group."""
    return await _stream(db, ctx, principal, trial_ids, "validation")


ROUTES = [get_metrics, get_training_metrics, get_validation_metrics]
