"""Experiments: create, list, describe, state changes, patch, archive, trials, checkpoints."""

from __future__ import annotations

import base64
from typing import Annotated

from litestar import get, patch, post
from litestar.params import FromQuery, JSONBody, Parameter, QueryParameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import (
    Id32,
    Limit,
    Offset,
    OrderBy,
    UserIds,
    check_ids,
    clamp_limit,
    is_desc,
)
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.experiments import (
    BestValidationResponse,
    ContinueExperimentRequest,
    ContinueExperimentResponse,
    CreateExperimentRequest,
    CreateExperimentResponse,
    ExperimentResponse,
    ExperimentsResponse,
    ModelDefResponse,
    PatchExperimentRequest,
    TrialsResponse,
)
from controlplane.api.schemas.reports import CheckpointsResponse, Empty
from controlplane.api.serializers import checkpoint_out, experiment_out, trial_out
from controlplane.db.models import Experiment, ExperimentContext
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.rbac import Permission
from controlplane.services import (
    checkpoint_requests,
    checkpoints,
    experiment_continue,
    experiment_control,
    experiment_states,
    experiments,
    trials,
    workspaces,
)

IntList = Annotated[list[int] | None, Parameter()]
StrList = Annotated[list[str] | None, Parameter()]


async def _out(db: Db, exp: Experiment) -> ExperimentResponse:
    counts = await experiments.trial_counts(db, [exp.id])
    names = await experiments.usernames(db, {exp.owner_id})
    places = await workspaces.places(db, {exp.project_id})
    states = await experiment_states.wire_states(db, [exp])
    return ExperimentResponse(
        experiment=experiment_out(
            exp,
            num_trials=counts.get(exp.id, 0),
            username=names.get(exp.owner_id, ""),
            wire_state=states[exp.id],
            place=places.get(exp.project_id),
        ),
        config=exp.config,
    )


# The response a created or found experiment gets (api/unmanaged.py answers with it too).
experiment_response = _out


@post("/api/v1/experiments", status_code=200)
async def create_experiment(
    data: JSONBody[CreateExperimentRequest], db: Db, principal: Caller, ctx: Ctx
) -> CreateExperimentResponse:
    created = await experiments.create_experiment(
        db,
        principal.user,
        experiments.NewExperiment(
            config=data.config,
            files=data.model_definition or [],
            template=data.template,
            project_id=data.project_id or None,
            activate=data.activate,
            validate_only=data.validate_only,
            parent_id=data.parent_id or None,
            unmanaged=bool(data.unmanaged),  # a detached run's (api/unmanaged.py)
        ),
        ctx.experiment_defaults,
        now=ctx.clock(),
    )
    if created.experiment is None:
        return CreateExperimentResponse(experiment=None, config=created.config)
    out = await _out(db, created.experiment)
    return CreateExperimentResponse(experiment=out.experiment, config=created.config)


@get("/api/v1/experiments")
async def list_experiments(
    db: Db,
    principal: Caller,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    sort_by: Annotated[str, QueryParameter(name="sortBy")] = ("SORT_BY_UNSPECIFIED"),
    archived: FromQuery[bool | None] = None,
    users: StrList = None,
    user_ids: UserIds = None,
    states: StrList = None,
    name: FromQuery[str | None] = None,
    description: FromQuery[str | None] = None,
    labels: StrList = None,
    project_id: Annotated[int | None, QueryParameter(name="projectId", ge=0, le=2**31 - 1)] = None,
    id_gt: Annotated[int | None, QueryParameter(name="experimentIdFilter.gt")] = None,
    id_gte: Annotated[int | None, QueryParameter(name="experimentIdFilter.gte")] = None,
    id_lt: Annotated[int | None, QueryParameter(name="experimentIdFilter.lt")] = None,
    id_lte: Annotated[int | None, QueryParameter(name="experimentIdFilter.lte")] = None,
    id_incl: Annotated[list[int] | None, QueryParameter(name="experimentIdFilter.incl")] = None,
    id_not_in: Annotated[list[int] | None, QueryParameter(name="experimentIdFilter.notIn")] = None,
) -> ExperimentsResponse:
    check_ids(id_gt, id_gte, id_lt, id_lte, *(id_incl or []), *(id_not_in or []), *(user_ids or []))
    page = clamp_limit(limit)
    rows, total = await experiments.list_experiments(
        db,
        experiments.ExperimentFilter(
            archived=archived,
            usernames=tuple(users or ()),
            user_ids=tuple(user_ids or ()),
            states=tuple(states or ()),
            name=name,
            description=description,
            labels=tuple(labels or ()),
            project_id=project_id or None,
            id_gt=id_gt,
            id_gte=id_gte,
            id_lt=id_lt,
            id_lte=id_lte,
            id_in=tuple(id_incl or ()),
            id_not_in=tuple(id_not_in or ()),
            workspaces=principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA),
        ),
        sort_by=sort_by,
        descending=is_desc(order_by),
        offset=offset,
        limit=page,
    )
    counts = await experiments.trial_counts(db, [r.id for r in rows])
    names = await experiments.usernames(db, {r.owner_id for r in rows})
    places = await workspaces.places(db, {r.project_id for r in rows})
    states = await experiment_states.wire_states(db, rows)
    return ExperimentsResponse(
        experiments=[
            experiment_out(
                r,
                num_trials=counts.get(r.id, 0),
                username=names.get(r.owner_id, ""),
                wire_state=states[r.id],
                place=places.get(r.project_id),
            )
            for r in rows
        ],
        pagination=Pagination.of(offset, page, len(rows), total),
    )


@get("/api/v1/experiments/{experiment_id:int}")
async def get_experiment(db: Db, principal: Caller, experiment_id: Id32) -> ExperimentResponse:
    return await _out(db, await experiments.get_experiment(db, experiment_id))


@patch("/api/v1/experiments/{experiment_id:int}")
async def patch_experiment(
    data: JSONBody[PatchExperimentRequest], db: Db, principal: Caller, ctx: Ctx, experiment_id: Id32
) -> ExperimentResponse:
    if data.id not in (None, 0, experiment_id):
        raise InvalidArgument(f"body id {data.id} does not match the path id {experiment_id}")
    res = data.resources
    exp = await experiment_control.patch(
        db,
        principal.user,
        experiment_id,
        experiment_control.ExperimentPatch(
            name=data.name,
            description=data.description,
            notes=data.notes,
            labels=data.labels,
            priority=res.priority if res else None,
            weight=res.weight if res else None,
            max_slots=res.max_slots if res else None,
        ),
    )
    if data.checkpoint_storage is not None:
        await checkpoint_requests.patch_gc_policy(db, exp, data.checkpoint_storage, ctx.clock())
        if ctx.periodic is not None:
            await db.commit()  # the woken GC pass must see the new policy
            ctx.periodic.wake_gc()
    return await _out(db, exp)


def _verb(path: str, action):  # type: ignore[no-untyped-def]
    @post(f"/api/v1/experiments/{{experiment_id:int}}/{path}", status_code=200, name=f"exp-{path}")
    async def handler(db: Db, principal: Caller, ctx: Ctx, experiment_id: Id32) -> Empty:
        await action(db, principal.user, experiment_id, ctx.clock())
        return Empty()

    return handler


async def _kill(db, user, exp_id, now):  # type: ignore[no-untyped-def]
    await experiment_control.stop(db, user, exp_id, now, kill=True)


async def _cancel(db, user, exp_id, now):  # type: ignore[no-untyped-def]
    await experiment_control.stop(db, user, exp_id, now, kill=False)


async def _archive(db, user, exp_id, now):  # type: ignore[no-untyped-def]
    await experiment_control.set_archived(db, user, exp_id, True)


async def _unarchive(db, user, exp_id, now):  # type: ignore[no-untyped-def]
    await experiment_control.set_archived(db, user, exp_id, False)


VERBS = [
    _verb("pause", experiment_control.pause),
    _verb("activate", experiment_control.activate),
    _verb("kill", _kill),
    _verb("cancel", _cancel),
    _verb("archive", _archive),
    _verb("unarchive", _unarchive),
]


@get("/api/v1/experiments/{experiment_id:int}/trials")
async def experiment_trials(
    db: Db,
    principal: Caller,
    experiment_id: Id32,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    states: StrList = None,
) -> TrialsResponse:
    await experiments.get_experiment(db, experiment_id)
    page = clamp_limit(limit, default=1000)
    rows, total = await trials.list_trials(
        db,
        experiment_id,
        states=tuple(states or ()),
        descending=is_desc(order_by),
        offset=offset,
        limit=page,
    )
    out = []
    for t in rows:
        out.append(
            trial_out(
                t,
                latest_validation=await trials.latest_metric(db, t.id, "validation"),
                latest_training=await trials.latest_metric(db, t.id, "training"),
                best_validation=await trials.best_validation_metric(db, t),
            )
        )
    return TrialsResponse(trials=out, pagination=Pagination.of(offset, page, len(rows), total))


@get("/api/v1/experiments/{experiment_id:int}/checkpoints")
async def experiment_checkpoints(
    db: Db,
    principal: Caller,
    experiment_id: Id32,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    sort_by_attr: Annotated[str, QueryParameter(name="sortByAttr")] = ("SORT_BY_UNSPECIFIED"),
    states: StrList = None,
) -> CheckpointsResponse:
    page = clamp_limit(limit, default=1000)
    rows, total = await checkpoints.list_for_experiment(
        db,
        experiment_id,
        states=tuple(states or ()),
        sort_by=sort_by_attr,
        descending=is_desc(order_by),
        offset=offset,
        limit=page,
    )
    return CheckpointsResponse(
        checkpoints=[checkpoint_out(await checkpoints.view(db, c)) for c in rows],
        pagination=Pagination.of(offset, page, len(rows), total),
    )


@get("/api/v1/experiments/{experiment_id:int}/searcher/best_searcher_validation_metric")
async def best_validation(db: Db, principal: Caller, experiment_id: Id32) -> BestValidationResponse:
    value = await trials.best_validation(db, experiment_id)
    if value is None:
        raise NotFound(f"experiment {experiment_id} has no validation metrics yet")
    return BestValidationResponse(metric=value)


@get("/api/v1/experiments/{experiment_id:int}/model_def")
async def model_def(db: Db, principal: Caller, experiment_id: Id32) -> ModelDefResponse:
    await experiments.get_experiment(db, experiment_id)
    ctx = await db.get(ExperimentContext, experiment_id)
    return ModelDefResponse(b64_tgz=base64.b64encode(ctx.archive).decode() if ctx else "")


@post("/api/v1/experiments/continue", status_code=200)
async def continue_experiment(
    data: JSONBody[ContinueExperimentRequest], db: Db, principal: Caller, ctx: Ctx
) -> ContinueExperimentResponse:
    """ContinueExperiment: an ended experiment runs again with `overrideConfig` merged over its
    config, its unfinished trials (a single trial: that trial) resuming from their checkpoints."""
    check_ids(data.id)
    exp = await experiment_continue.continue_experiment(
        db, principal.user, data.id, data.override_config, ctx.experiment_defaults, ctx.clock()
    )
    await db.flush()
    return ContinueExperimentResponse(experiment=(await _out(db, exp)).experiment)


ROUTES = [
    create_experiment,
    continue_experiment,
    list_experiments,
    get_experiment,
    patch_experiment,
    *VERBS,
    experiment_trials,
    experiment_checkpoints,
    best_validation,
    model_def,
]
