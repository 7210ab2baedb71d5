"""Historical usage and what work cost.

Determined 0.38.1's usage API, in its paths and shapes, with our cost beside its fields:
- `GET /api/v1/resources/allocation/aggregated` (startDate, endDate, period) and
  `GET /api/v1/resources/allocation/raw` (timestampAfter, timestampBefore): JSON, what the
  cluster page's historical usage reads; the query names also in snake_case, as
  `det resources ... --json` sends them;
- `GET /resources/allocation/aggregated`, `/resources/allocation/raw` and
  `/resources/allocation/allocations-csv`: the CSV exports (`det resources ...`).
Ours: `GET /api/v1/experiments/{id}/cost`, `GET /api/v1/trials/{id}/cost` (the describe
commands) and `GET /api/v1/resources/cost` (summed per user, workspace, pool, experiment, trial
or label over a window).

Anyone logged in reads usage, as in Determined without RBAC; under RBAC it takes
VIEW_CLUSTER_USAGE (route_permissions.py). The sums are pure (domain/cost.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from litestar import Response, get
from litestar.params import QueryParameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.usage import (
    AllocationCost,
    CostByGroupResponse,
    CostSummary,
    ExperimentCostResponse,
    ResourceAllocationAggregatedEntry,
    ResourceAllocationAggregatedResponse,
    ResourceAllocationRawEntry,
    ResourceAllocationRawResponse,
    TrialCostResponse,
)
from controlplane.api.usage_csv import aggregated_csv, allocations_csv, raw_csv, rfc3339
from controlplane.domain.cost import (
    GROUPINGS,
    AllocationUse,
    Share,
    instance_cost,
    overlap_seconds,
    shares_of,
    sum_shares,
    totals_by,
)
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.usage_periods import (
    PeriodTotals,
    UsageArgumentError,
    aggregate,
    periods,
    window,
)
from controlplane.services import cost, experiments, trials

# Query values are dates, timestamps and enum names: anything longer is not one of them.
Text = Annotated[str | None, QueryParameter(max_length=128)]
StartDate = Annotated[str | None, QueryParameter(name="startDate", max_length=128)]
EndDate = Annotated[str | None, QueryParameter(name="endDate", max_length=128)]
After = Annotated[str | None, QueryParameter(name="timestampAfter", max_length=128)]
Before = Annotated[str | None, QueryParameter(name="timestampBefore", max_length=128)]
GroupBy = Annotated[str | None, QueryParameter(name="groupBy", max_length=32)]


def _either(camel: str | None, snake: str | None, name: str) -> str:
    value = camel if camel is not None else snake
    if value is None or value == "":
        raise InvalidArgument(f"{name} is required")
    return value


def _summary(share: Share) -> CostSummary:
    return CostSummary(
        cost=round(share.cost, 6),
        slot_hours=round(share.slot_hours, 6),
        unpriced_slot_hours=round(share.unpriced_slot_seconds / 3600, 6),
    )


def _window(after: str, before: str) -> tuple[datetime, datetime]:
    try:
        return window(after, before)
    except UsageArgumentError as exc:
        raise InvalidArgument(str(exc)) from None


async def _periods(
    db: Db, now: datetime, start: str, end: str, period: str | None
) -> list[PeriodTotals]:
    try:
        spans = periods(start, end, period or "")
    except UsageArgumentError as exc:
        raise InvalidArgument(str(exc)) from None
    first, last = spans[0].start, spans[-1].end
    try:
        uses = await cost.uses_in_window(db, first, last)
    except cost.TooMuchUsage as exc:
        raise InvalidArgument(str(exc)) from None
    lives = await cost.lives_of_agents(db, uses)
    return aggregate(uses, lives, now, spans)


def _seconds(groups: dict[str, Share]) -> dict[str, float]:
    return {k: v.slot_seconds for k, v in groups.items()}


def _costs(groups: dict[str, Share]) -> dict[str, float]:
    return {k: round(v.cost, 6) for k, v in groups.items()}


def _entry(p: PeriodTotals, period: str) -> ResourceAllocationAggregatedEntry:
    return ResourceAllocationAggregatedEntry(
        period_start=p.period.label,
        period=period,
        seconds=p.total.slot_seconds,
        by_username=_seconds(p.by_username),
        by_experiment_label=_seconds(p.by_experiment_label),
        by_resource_pool=_seconds(p.by_resource_pool),
        by_workspace=_seconds(p.by_workspace),
        unpriced_seconds=p.total.unpriced_slot_seconds,
        cost=round(p.total.cost, 6),
        cost_by_username=_costs(p.by_username),
        cost_by_experiment_label=_costs(p.by_experiment_label),
        cost_by_resource_pool=_costs(p.by_resource_pool),
        cost_by_workspace=_costs(p.by_workspace),
    )


@get("/api/v1/resources/allocation/aggregated")
async def get_aggregated(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    start_date_camel: StartDate = None,
    end_date_camel: EndDate = None,
    start_date: Text = None,
    end_date: Text = None,
    period: Text = None,
) -> ResourceAllocationAggregatedResponse:
    """Slot-seconds (and cost) per day or month: total, by user, experiment label, pool."""
    start = _either(start_date_camel, start_date, "startDate")
    end = _either(end_date_camel, end_date, "endDate")
    totals = await _periods(db, ctx.clock(), start, end, period)
    return ResourceAllocationAggregatedResponse(
        resource_entries=[_entry(p, period or "") for p in totals]
    )


@get("/resources/allocation/aggregated", media_type="text/csv")
async def get_aggregated_csv(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    start_date: Text = None,
    end_date: Text = None,
    period: Text = None,
) -> Response[str]:
    """The same, as Determined's CSV (aggregation_type, aggregation_key, date, seconds)."""
    start = _either(None, start_date, "start_date")
    end = _either(None, end_date, "end_date")
    totals = await _periods(db, ctx.clock(), start, end, period)
    return Response(aggregated_csv(totals), media_type="text/csv")


async def _raw_entries(
    db: Db, now: datetime, start: datetime, end: datetime
) -> list[ResourceAllocationRawEntry]:
    try:
        uses = await cost.uses_in_window(db, start, end)
    except cost.TooMuchUsage as exc:
        raise InvalidArgument(str(exc)) from None
    lives = await cost.lives_of_agents(db, uses)
    entries = [
        _raw_allocation(use, share, now, (start, end))
        for use, share in shares_of(uses, lives, now, (start, end))
    ]
    for life in await cost.lives_in_window(db, start, end):
        share = instance_cost(life, now, (start, end))
        entries.append(
            ResourceAllocationRawEntry(
                kind="instance",
                start_time=rfc3339(life.start),
                end_time=rfc3339(life.end) or None,
                username=life.instance_id,
                seconds=overlap_seconds(life.start, life.end or now, start, end),
                slots=life.slots,
                resource_pool=life.pool,
                instance_type=life.instance_type,
                price_per_hour=life.price_per_hour,
                unpriced_seconds=share.unpriced_slot_seconds,
                cost=round(share.cost, 6),
            )
        )
    entries.sort(key=lambda e: e.start_time or "")
    return entries


def _raw_allocation(
    use: AllocationUse, share: Share, now: datetime, bounds: tuple[datetime, datetime]
) -> ResourceAllocationRawEntry:
    return ResourceAllocationRawEntry(
        kind=use.task_type.lower(),
        start_time=rfc3339(use.start),
        end_time=rfc3339(use.end) or None,
        experiment_id=use.experiment_id,
        username=use.username,
        user_id=use.user_id,
        labels=list(use.labels) if use.experiment_id is not None else None,
        seconds=overlap_seconds(use.start, use.end or now, *bounds),
        slots=use.slots,
        allocation_id=use.allocation_id,
        trial_id=use.trial_id,
        resource_pool=use.pool,
        workspace=use.workspace,
        unpriced_seconds=share.unpriced_slot_seconds,
        cost=round(share.cost, 6),
    )


@get("/api/v1/resources/allocation/raw")
async def get_raw(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    after_camel: After = None,
    before_camel: Before = None,
    timestamp_after: Text = None,
    timestamp_before: Text = None,
) -> ResourceAllocationRawResponse:
    """Each allocation (kind: its task type) and each provisioned instance (kind `instance`,
    username: the instance id, as Determined) in the window, with seconds and cost in it."""
    start, end = _window(
        _either(after_camel, timestamp_after, "timestampAfter"),
        _either(before_camel, timestamp_before, "timestampBefore"),
    )
    return ResourceAllocationRawResponse(
        resource_entries=await _raw_entries(db, ctx.clock(), start, end)
    )


@get("/resources/allocation/raw", media_type="text/csv")
async def get_raw_csv(
    db: Db, principal: Caller, ctx: Ctx, timestamp_after: Text = None, timestamp_before: Text = None
) -> Response[str]:
    """The same, as Determined's CSV (experiment_id, kind, username, labels, slots, ...)."""
    start, end = _window(
        _either(None, timestamp_after, "timestamp_after"),
        _either(None, timestamp_before, "timestamp_before"),
    )
    entries = await _raw_entries(db, ctx.clock(), start, end)
    return Response(raw_csv(entries), media_type="text/csv")


@get("/resources/allocation/allocations-csv", media_type="text/csv")
async def get_allocations_csv(
    db: Db, principal: Caller, ctx: Ctx, timestamp_after: Text = None, timestamp_before: Text = None
) -> Response[str]:
    """One row per allocation in the window (Determined's columns, then trial, pool, slot-hours
    and cost within the window)."""
    start, end = _window(
        _either(None, timestamp_after, "timestamp_after"),
        _either(None, timestamp_before, "timestamp_before"),
    )
    try:
        uses = await cost.uses_in_window(db, start, end)
    except cost.TooMuchUsage as exc:
        raise InvalidArgument(str(exc)) from None
    lives = await cost.lives_of_agents(db, uses)
    pairs = shares_of(uses, lives, ctx.clock(), (start, end))
    return Response(allocations_csv(pairs), media_type="text/csv")


@get("/api/v1/experiments/{experiment_id:int}/cost")
async def get_experiment_cost(
    db: Db, principal: Caller, ctx: Ctx, experiment_id: Id32
) -> ExperimentCostResponse:
    """What the experiment's allocations cost so far: in all, per trial and per pool."""
    await experiments.get_experiment(db, experiment_id)
    uses = await cost.uses_of_experiment(db, experiment_id)
    pairs = shares_of(uses, await cost.lives_of_agents(db, uses), ctx.clock())
    return ExperimentCostResponse(
        experiment_id=experiment_id,
        total=_summary(sum_shares(s for _, s in pairs)),
        by_trial={k: _summary(v) for k, v in totals_by(pairs, GROUPINGS["trial"]).items()},
        by_resource_pool={k: _summary(v) for k, v in totals_by(pairs, GROUPINGS["pool"]).items()},
    )


@get("/api/v1/trials/{trial_id:int}/cost")
async def get_trial_cost(db: Db, principal: Caller, ctx: Ctx, trial_id: Id32) -> TrialCostResponse:
    """What the trial's allocations cost so far, in all and one by one."""
    trial = await trials.get_trial(db, trial_id)
    uses = await cost.uses_of_trial(db, trial_id)
    pairs = shares_of(uses, await cost.lives_of_agents(db, uses), ctx.clock())
    return TrialCostResponse(
        trial_id=trial_id,
        experiment_id=trial.experiment_id,
        total=_summary(sum_shares(s for _, s in pairs)),
        allocations=[
            AllocationCost(
                allocation_id=use.allocation_id,
                trial_id=use.trial_id,
                resource_pool=use.pool,
                slots=use.slots,
                start_time=rfc3339(use.start),
                end_time=rfc3339(use.end) or None,
                cost=_summary(share),
            )
            for use, share in pairs
        ],
    )


@get("/api/v1/resources/cost")
async def get_cost_by_group(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    group_by: GroupBy = None,
    after_camel: After = None,
    before_camel: Before = None,
) -> CostByGroupResponse:
    """Cost in the window summed per `groupBy`: user, workspace, pool, experiment, trial or
    label (an allocation counts under each of its experiment's labels)."""
    if group_by is None or group_by not in GROUPINGS:
        raise InvalidArgument(f"groupBy must be one of {', '.join(sorted(GROUPINGS))}")
    after = _either(after_camel, None, "timestampAfter")
    before = _either(before_camel, None, "timestampBefore")
    start, end = _window(after, before)
    try:
        uses = await cost.uses_in_window(db, start, end)
    except cost.TooMuchUsage as exc:
        raise InvalidArgument(str(exc)) from None
    now = ctx.clock()
    pairs = shares_of(uses, await cost.lives_of_agents(db, uses), now, (start, end))
    machines: dict[str, Share] = {}
    for life in await cost.lives_in_window(db, start, end):
        machines[life.pool] = machines.get(life.pool, Share()) + instance_cost(
            life, now, (start, end)
        )
    return CostByGroupResponse(
        group_by=group_by,
        timestamp_after=rfc3339(start),
        timestamp_before=rfc3339(end),
        total=_summary(sum_shares(s for _, s in pairs)),
        groups={k: _summary(v) for k, v in totals_by(pairs, GROUPINGS[group_by]).items()},
        instances_by_pool={k: _summary(v) for k, v in sorted(machines.items())},
    )


ROUTES = [
    get_aggregated,
    get_aggregated_csv,
    get_raw,
    get_raw_csv,
    get_allocations_csv,
    get_experiment_cost,
    get_trial_cost,
    get_cost_by_group,
]
