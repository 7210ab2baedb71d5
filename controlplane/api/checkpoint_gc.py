"""Ours: an experiment's checkpoint GC, shown as a dry run or requested now."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import get, post
from litestar.params import Parameter
from sqlalchemy import select

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.reports import CheckpointGcEntry, CheckpointGcPlan
from controlplane.db.models import Checkpoint, Metric
from controlplane.services import checkpoint_gc, checkpoint_requests, experiments
from controlplane.services.checkpoint_gc import GcRun


def _plan_out(run: GcRun, *, dry_run: bool) -> CheckpointGcPlan:
    def entry(uuid: str) -> CheckpointGcEntry:
        f = run.facts[uuid]
        return CheckpointGcEntry(
            uuid=uuid,
            trial_id=f.trial_id,
            steps_completed=f.steps_completed,
            searcher_metric=f.metric,
            keep_reasons=[r.name for r in run.plan.keep.get(uuid, ())],
        )

    order = sorted(run.facts.values(), key=lambda f: (f.trial_id, f.steps_completed, f.uuid))
    return CheckpointGcPlan(
        experiment_id=run.experiment_id,
        dry_run=dry_run,
        delete=[entry(f.uuid) for f in order if f.uuid in set(run.plan.delete)],
        keep=[entry(f.uuid) for f in order if f.uuid in run.plan.keep],
    )


@get("/api/v1/experiments/{experiment_id:int}/checkpoint_gc")
async def gc_dry_run(db: Db, principal: Caller, experiment_id: Id32) -> CheckpointGcPlan:
    """What GC of this experiment would delete now and why it keeps the rest (no change)."""
    run = await checkpoint_gc.plan_experiment(
        db, experiment_id, checkpoint_gc.registered_checkpoint_uuids
    )
    return _plan_out(run, dry_run=True)


@post("/api/v1/experiments/{experiment_id:int}/checkpoint_gc", status_code=200)
async def gc_now(db: Db, principal: Caller, ctx: Ctx, experiment_id: Id32) -> CheckpointGcPlan:
    """Collect an ended experiment's checkpoints now (a running one is collected when it
    ends); answers the plan it starts from."""
    exp = await experiments.get_experiment(db, experiment_id)
    experiments.can_modify(principal.user, exp)
    run = await checkpoint_gc.plan_experiment(
        db, experiment_id, checkpoint_gc.registered_checkpoint_uuids
    )
    await checkpoint_requests.request_experiment_gc(db, exp, ctx.clock())
    await db.commit()
    if ctx.periodic is not None:
        ctx.periodic.wake_gc()
    return _plan_out(run, dry_run=False)


Count = Annotated[int | None, Parameter(ge=0, le=2**31 - 1)]


# The real client asks for it outside /api/v1 (a route of Determined's old HTTP API).
@get(
    [
        "/api/v1/experiments/{experiment_id:int}/preview_gc",
        "/experiments/{experiment_id:int}/preview_gc",
    ]
)
async def preview_gc(
    db: Db,
    principal: Caller,
    experiment_id: Id32,
    save_experiment_best: Count = None,
    save_trial_best: Count = None,
    save_trial_latest: Count = None,
) -> dict[str, Any]:
    """Determined's preview for `det experiment set gc-policy`: the checkpoints that policy
    would delete (in Determined's own capitalised field names)."""
    counts = {
        k: v
        for k, v in (
            ("save_experiment_best", save_experiment_best),
            ("save_trial_best", save_trial_best),
            ("save_trial_latest", save_trial_latest),
        )
        if v is not None
    }
    run = await checkpoint_gc.plan_experiment(
        db, experiment_id, checkpoint_gc.registered_checkpoint_uuids, counts=counts
    )
    exp = await experiments.get_experiment(db, experiment_id)
    metric = ((exp.config or {}).get("searcher") or {}).get("metric") or ""
    rows = list(await db.scalars(select(Checkpoint).where(Checkpoint.uuid.in_(run.plan.delete))))
    out = []
    for c in sorted(rows, key=lambda c: (c.trial_id or 0, c.report_time, c.uuid)):
        validation = await db.scalar(
            select(Metric.metrics)
            .where(
                Metric.trial_id == c.trial_id,
                Metric.group == "validation",
                Metric.total_batches == c.steps_completed,
                Metric.archived.is_(False),
            )
            .order_by(Metric.id.desc())
            .limit(1)
        )
        avg = (validation or {}).get("avg_metrics") or {}
        entry: dict[str, Any] = {
            "UUID": c.uuid,
            "TrialID": c.trial_id,
            "StepsCompleted": c.steps_completed,
            "State": f"STATE_{c.state}",
            "ReportTime": c.report_time.isoformat(),
            "Resources": dict(c.resources or {}),
            "ValidationMetrics": avg,
        }
        if validation is not None:
            entry["step"] = {"validation": {"metrics": {"validation_metrics": avg}}}
        out.append(entry)
    return {"checkpoints": out, "metric_name": metric}


ROUTES = [gc_dry_run, gc_now, preview_gc]
