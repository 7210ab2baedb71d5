"""Detached (unmanaged) runs: what `det.experimental.core_v2.init(...)` calls from outside the
cluster (Determined's PutExperiment, CreateTrial, PutTrial, StartTrial, PatchTrial, and the
log shipper's POST /task-logs). Metrics, checkpoints and run preparation use the routes a
managed trial uses, with the user's session."""

from __future__ import annotations

from typing import Annotated

from litestar import get, patch, post, put
from litestar.params import JSONBody, Parameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.experiments import experiment_response
from controlplane.api.params import Id32
from controlplane.api.schemas.experiments import CreateExperimentRequest, CreateExperimentResponse
from controlplane.api.schemas.reports import Empty
from controlplane.api.schemas.unmanaged import (
    CreateTrialRequest,
    FluentLogLine,
    PatchTrialRequest,
    PutTrialRequest,
    StartTrialRequest,
    StartTrialResponse,
    TrialReply,
)
from controlplane.api.serializers import trial_out
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.rbac import Permission
from controlplane.domain.unmanaged import reported_state
from controlplane.services import experiments, logs, unmanaged, workspaces

ExternalId = Annotated[str, Parameter(min_length=1, max_length=255)]


@put("/api/v1/experiments/by-external-id/{external_experiment_id:str}", status_code=200)
async def put_experiment(
    data: JSONBody[CreateExperimentRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    external_experiment_id: ExternalId,
) -> CreateExperimentResponse:
    """The unmanaged experiment a detached run names: created on first use, found after."""
    if not data.unmanaged:
        raise InvalidArgument("only unmanaged experiments can be put by an external id")
    created = await unmanaged.put_experiment(
        db,
        principal.user,
        experiments.NewExperiment(
            config=data.config,
            files=data.model_definition or [],
            project_id=data.project_id or None,
            unmanaged=True,
        ),
        external_experiment_id,
        ctx.experiment_defaults,
        now=ctx.clock(),
    )
    assert created.experiment is not None
    await db.flush()
    out = await experiment_response(db, created.experiment)
    return CreateExperimentResponse(experiment=out.experiment, config=created.config)


def _check_unmanaged(req: CreateTrialRequest) -> None:
    if not req.unmanaged:
        raise InvalidArgument("only unmanaged trials are supported")


@get("/api/v1/trials/by-external-id/{external_experiment_id:str}/{external_trial_id:str}")
async def get_trial_by_external_id(
    db: Db, principal: Caller, external_experiment_id: ExternalId, external_trial_id: ExternalId
) -> TrialReply:
    """A detached run's trial by the ids the run gave (404 where the caller may not view it)."""
    trial, exp = await unmanaged.trial_by_external_ids(
        db, external_experiment_id, external_trial_id
    )
    visible = principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA)
    if visible is not None:
        place = (await workspaces.places(db, {exp.project_id})).get(exp.project_id)
        if place is None or place.workspace_id not in visible:
            raise NotFound(
                f"no trial {external_trial_id!r} in experiment {external_experiment_id!r}"
            )
    return TrialReply(trial=trial_out(trial))


@post("/api/v1/trials", status_code=200)
async def create_trial(
    data: JSONBody[CreateTrialRequest], db: Db, principal: Caller, ctx: Ctx
) -> TrialReply:
    """A new trial of an unmanaged experiment (its run reports to it)."""
    _check_unmanaged(data)
    trial = await unmanaged.create_trial(
        db, principal.user, data.experiment_id, data.hparams, None, ctx.clock()
    )
    return TrialReply(trial=trial_out(trial))


@put("/api/v1/trials", status_code=200)
async def put_trial(
    data: JSONBody[PutTrialRequest], db: Db, principal: Caller, ctx: Ctx
) -> TrialReply:
    """The trial a detached run names within its experiment: created on first use."""
    req = data.create_trial_request
    _check_unmanaged(req)
    trial = await unmanaged.create_trial(
        db, principal.user, req.experiment_id, req.hparams, data.external_trial_id, ctx.clock()
    )
    return TrialReply(trial=trial_out(trial))


@post("/api/v1/trials/{trial_id:int}/start", status_code=200)
async def start_trial(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    trial_id: Id32,
    data: JSONBody[StartTrialRequest | None] = None,
) -> StartTrialResponse:
    """A new run of a detached trial: its run id, steps so far and latest checkpoint."""
    resume = True if data is None or data.resume is None else data.resume
    started = await unmanaged.start_trial(db, principal, trial_id, resume, ctx.clock())
    return StartTrialResponse(
        trial_run_id=started.trial_run_id,
        steps_completed=started.steps_completed,
        latest_checkpoint=started.latest_checkpoint,
    )


@patch("/api/v1/trials/{trial_id:int}", status_code=200)
async def patch_trial(
    data: JSONBody[PatchTrialRequest], db: Db, principal: Caller, ctx: Ctx, trial_id: Id32
) -> TrialReply:
    """A detached run's heartbeat (no state) or the state it reports of itself."""
    state = reported_state(data.state) if data.state else None
    trial = await unmanaged.patch_trial(db, principal, trial_id, state, ctx.clock())
    return TrialReply(trial=trial_out(trial))


@post("/task-logs", status_code=200)
async def post_fluent_logs(
    data: JSONBody[list[FluentLogLine]], db: Db, principal: Caller, ctx: Ctx
) -> Empty:
    """Log lines as Determined's fluent-bit shipper and core_v2's log shipper post them."""
    lines = [
        logs.LogLine(
            task_id=line.task_id,
            log=line.log,
            timestamp=line.timestamp,
            rank_id=int(line.rank) if line.rank and line.rank.isdigit() else None,
        )
        for line in data
    ]
    await logs.append(db, principal, lines, ctx.clock())
    return Empty()


ROUTES = [
    put_experiment,
    get_trial_by_external_id,
    create_trial,
    put_trial,
    start_trial,
    patch_trial,
    post_fluent_logs,
]
