"""Determined's experiment metric streams, as NDJSON (`{"result": …}` per line):

- GET /api/v1/experiments/metrics-stream/metric-names (ExpMetricNames)
- GET /api/v1/experiments/{id}/metrics-stream/batches (MetricBatches)
- GET /api/v1/experiments/{id}/metrics-stream/trials-snapshot (TrialsSnapshot)
- GET /api/v1/experiments/{id}/metrics-stream/trials-sample (TrialsSample)

As Determined's: a message at once, then one every `periodSeconds` (default 30) with what is
new, until the experiments are terminal, when the stream ends after its last message. The
request is checked (experiments exist, the caller may read them, arguments) before the first
line, so a refusal is an HTTP error; each round then reads with a session of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from litestar import get
from litestar.params import QueryParameter
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.deps import ApiContext, Caller, Ctx, Db
from controlplane.api.params import Id32, check_ids
from controlplane.api.trial_metrics import NDJSON, _line, _timestamp
from controlplane.domain import metric_streams as ms
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.rbac import Permission
from controlplane.services import experiments, metric_streams, rbac_scopes

_INT32 = 2**31 - 1
MAX_IDS = 1000
Period = Annotated[int | None, QueryParameter(name="periodSeconds", ge=0, le=86_400)]
MetricName = Annotated[str, QueryParameter(name="metricName", min_length=1, max_length=1024)]
Group = Annotated[str | None, QueryParameter(max_length=128)]
MetricType = Annotated[str | None, QueryParameter(name="metricType", max_length=64)]
Round = Callable[[AsyncSession], Awaitable[dict[str, Any]]]


async def _polled(
    ctx: ApiContext, experiment_ids: list[int], period: int | None, next_message: Round
) -> AsyncIterator[bytes]:
    """Determined's loop: send, stop once every experiment is terminal, else wait a period."""
    while True:
        async with ctx.sessionmaker() as session:
            # Read the state first: what is stored before it counts as sent when it is terminal.
            done = await metric_streams.all_terminal(session, experiment_ids)
            message = await next_message(session)
        yield _line({"result": message})
        if done:
            return
        await asyncio.sleep(ms.period_s(period))


def _stream(ctx: ApiContext, ids: list[int], period: int | None, round_: Round) -> Stream:
    return Stream(_polled(ctx, ids, period, round_), media_type=NDJSON)


async def _readable(db: Db, principal: Caller, experiment_ids: list[int]) -> None:
    for experiment_id in experiment_ids:
        await experiments.get_experiment(db, experiment_id)
    visible = principal.workspaces(Permission.VIEW_EXPERIMENT_ARTIFACTS)
    await rbac_scopes.require_experiments_in(db, experiment_ids, visible)


@get("/api/v1/experiments/metrics-stream/metric-names", media_type=NDJSON)
async def metric_names(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    ids: Annotated[list[int] | None, QueryParameter()] = None,
    period_seconds: Period = None,
) -> Stream:
    wanted = list(dict.fromkeys(ids or ()))
    if not wanted:
        raise InvalidArgument("must specify at least one experiment id")
    if len(wanted) > MAX_IDS:
        raise InvalidArgument(f"at most {MAX_IDS} experiment ids may be given")
    check_ids(*wanted)
    await _readable(db, principal, wanted)
    searcher = []
    for experiment_id in wanted:
        exp = await experiments.get_experiment(db, experiment_id)
        searcher.append(str((exp.config.get("searcher") or {}).get("metric") or ""))
    seen = ms.NamesSeen()

    async def next_message(session: AsyncSession) -> dict[str, Any]:
        found = await metric_streams.metric_names(session, wanted)
        return ms.next_names(seen, searcher, found)

    return _stream(ctx, wanted, period_seconds, next_message)


@get("/api/v1/experiments/{experiment_id:int}/metrics-stream/batches", media_type=NDJSON)
async def metric_batches(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    experiment_id: Id32,
    metric_name: MetricName,
    group: Group = None,
    metric_type: MetricType = None,
    period_seconds: Period = None,
) -> Stream:
    chosen = ms.group_of(metric_type, group, any_group=True)
    await _readable(db, principal, [experiment_id])
    seen: set[int] = set()
    cursor = [0]

    async def next_message(session: AsyncSession) -> dict[str, Any]:
        steps, cursor[0] = await metric_streams.metric_batches(
            session, experiment_id, chosen, metric_name, cursor[0]
        )
        return {"batches": ms.next_batches(seen, steps)}

    return _stream(ctx, [experiment_id], period_seconds, next_message)


@get("/api/v1/experiments/{experiment_id:int}/metrics-stream/trials-snapshot", media_type=NDJSON)
async def trials_snapshot(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    experiment_id: Id32,
    metric_name: MetricName,
    batches_processed: Annotated[int, QueryParameter(name="batchesProcessed", ge=0, le=_INT32)],
    batches_margin: Annotated[int, QueryParameter(name="batchesMargin", ge=0, le=_INT32)] = 0,
    group: Group = None,
    metric_type: MetricType = None,
    period_seconds: Period = None,
) -> Stream:
    chosen = ms.group_of(metric_type, group, any_group=True)
    window = ms.snapshot_window(batches_processed, batches_margin)
    await _readable(db, principal, [experiment_id])
    cursor = [0]

    async def next_message(session: AsyncSession) -> dict[str, Any]:
        rows, hparams, cursor[0] = await metric_streams.snapshot(
            session, experiment_id, chosen, metric_name, window, cursor[0]
        )
        trials = [
            {
                "trialId": r.trial_id,
                "hparams": hparams.get(r.trial_id, {}),
                "metric": r.value,
                "batchesProcessed": r.batches,
            }
            for r in rows
        ]
        return {"trials": trials}

    return _stream(ctx, [experiment_id], period_seconds, next_message)


@get("/api/v1/experiments/{experiment_id:int}/metrics-stream/trials-sample", media_type=NDJSON)
async def trials_sample(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    experiment_id: Id32,
    metric_name: MetricName,
    group: Group = None,
    metric_type: MetricType = None,
    max_trials: Annotated[int, QueryParameter(name="maxTrials", ge=0, le=1000)] = 0,
    max_datapoints: Annotated[int, QueryParameter(name="maxDatapoints", ge=0, le=10_000)] = 0,
    start_batches: Annotated[int, QueryParameter(name="startBatches", ge=0, le=_INT32)] = 0,
    end_batches: Annotated[int, QueryParameter(name="endBatches", ge=0, le=_INT32)] = 0,
    period_seconds: Period = None,
) -> Stream:
    chosen = ms.group_of(metric_type, group, any_group=True)
    await _readable(db, principal, [experiment_id])
    exp = await experiments.get_experiment(db, experiment_id)
    searcher = exp.config.get("searcher") or {}
    how = ms.ranking(str(searcher.get("name") or ""))
    smaller = bool(searcher.get("smaller_is_better", True))
    top_n = max_trials or ms.DEFAULT_MAX_TRIALS
    points = max_datapoints or ms.DEFAULT_MAX_DATAPOINTS
    window = (start_batches, end_batches or _INT32)
    current: list[int] = []

    async def next_message(session: AsyncSession) -> dict[str, Any]:
        standings = await metric_streams.standings(session, experiment_id)
        top = ms.top_trials(standings, how, top_n, smaller_is_better=smaller)
        promoted, demoted = ms.promotions(current, top)
        fresh = await metric_streams.hparams(session, set(promoted))
        trials = []
        for trial_id in top:
            data: list[dict[str, Any]] = []
            if trial_id in promoted:  # a trial's data goes with its entry, as Determined's
                found = await metric_streams.trial_points(
                    session, trial_id, chosen, metric_name, window, points
                )
                data = [_point(p, metric_name) for p in found]
            trials.append({"trialId": trial_id, "hparams": fresh.get(trial_id, {}), "data": data})
        current[:] = top
        return {"trials": trials, "promotedTrials": promoted, "demotedTrials": demoted}

    return _stream(ctx, [experiment_id], period_seconds, next_message)


def _point(p: Any, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "batches": p.steps,
        "time": _timestamp(p.time) if p.time is not None else "",
        "values": {name: p.values[name]},
    }
    if p.epoch is not None:
        out["epoch"] = p.epoch
    return out


ROUTES = [metric_names, metric_batches, trials_snapshot, trials_sample]
