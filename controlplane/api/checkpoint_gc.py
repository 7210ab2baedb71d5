"""Ours: an experiment's checkpoint GC, shown as a dry run or requested now."""

from __future__ import annotations

from litestar import get, post

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.reports import CheckpointGcEntry, CheckpointGcPlan
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
        db, experiment_id, checkpoint_gc.no_registered_checkpoints
    )
    return _plan_out(run, dry_run=True)


@post("/api/v1/experiments/{experiment_id:int}/checkpoint_gc", status_code=200)
async def gc_now(db: Db, principal: Caller, ctx: Ctx, experiment_id: Id32) -> CheckpointGcPlan:
    """Collect an ended experiment's checkpoints now (a running one is collected when it
    ends); answers the plan it starts from."""
    exp = await experiments.get_experiment(db, experiment_id)
    experiments.can_modify(principal.user, exp)
    run = await checkpoint_gc.plan_experiment(
        db, experiment_id, checkpoint_gc.no_registered_checkpoints
    )
    await checkpoint_requests.request_experiment_gc(db, exp, ctx.clock())
    await db.commit()
    if ctx.periodic is not None:
        ctx.periodic.wake_gc()
    return _plan_out(run, dry_run=False)


ROUTES = [gc_dry_run, gc_now]
