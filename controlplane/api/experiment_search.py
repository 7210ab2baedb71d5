"""The experiment list the web UI (and Determined's) reads: search with a filter tree, the
project's columns, and bulk actions with a result per experiment."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated

from litestar import get, post, put
from litestar.params import JSONBody, Parameter
from sqlalchemy import select

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.experiment_search import (
    BulkExperimentsRequest,
    BulkExperimentsResponse,
    ExperimentActionResult,
    ProjectColumn,
    ProjectColumnsResponse,
    RetainLogsRequest,
    SearchExperimentExperiment,
    SearchExperimentsRequest,
    SearchExperimentsResponse,
)
from controlplane.api.serializers import experiment_out, trial_out
from controlplane.db.models import Experiment, Metric, Project, Trial, User
from controlplane.domain import limits
from controlplane.domain.errors import DomainError, InvalidArgument, NotFound
from controlplane.domain.experiment_filter import (
    EXPERIMENT,
    EXPERIMENT_COLUMNS,
    HYPERPARAMETERS,
    NUMBER,
    VALIDATIONS,
    parse_filter,
    parse_sort,
)
from controlplane.domain.rbac import Permission
from controlplane.services import (
    experiment_control,
    experiment_search,
    experiment_states,
    experiments,
    log_retention,
    workspaces,
)
from controlplane.services.principals import Principal

ProjectId = Annotated[int, Parameter(ge=1, le=2**31 - 1)]


@post("/api/v1/experiments-search", status_code=200)
async def search_experiments(
    data: JSONBody[SearchExperimentsRequest], db: Db, principal: Caller
) -> SearchExperimentsResponse:
    search = parse_filter(data.filter)
    sort = parse_sort(data.sort)
    rows, total = await experiment_search.search_experiments(
        db,
        project_id=data.project_id or None,
        search=search,
        sort=sort,
        offset=data.offset,
        limit=data.limit,
        workspaces=principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA),
    )
    ids = [r.id for r in rows]
    counts = await experiments.trial_counts(db, ids)
    names = await experiments.usernames(db, {r.owner_id for r in rows})
    best = await experiment_search.best_trials(db, ids)
    states = await experiment_states.wire_states(db, rows)
    return SearchExperimentsResponse(
        experiments=[
            SearchExperimentExperiment(
                experiment=experiment_out(
                    r,
                    num_trials=counts.get(r.id, 0),
                    username=names.get(r.owner_id, ""),
                    wire_state=states[r.id],
                ),
                best_trial=trial_out(best[r.id]) if r.id in best else None,
            )
            for r in rows
        ],
        pagination=Pagination.of(data.offset, data.limit, len(rows), total),
    )


def _hparam_names(config: dict, prefix: str = "") -> list[str]:  # type: ignore[type-arg]
    names = []
    for key, value in (config or {}).items():
        if isinstance(value, dict) and "type" not in value:
            names.extend(_hparam_names(value, f"{prefix}{key}."))
        else:
            names.append(f"{prefix}{key}")
    return names


@get("/api/v1/projects/{project_id:int}/columns")
async def project_columns(
    db: Db, principal: Caller, project_id: ProjectId
) -> ProjectColumnsResponse:
    """The experiment columns, then the hyperparameters and validation metrics the project's
    experiments have (from the newest 1,000 experiments and their validation reports)."""
    if await db.get(Project, project_id) is None:
        raise NotFound(f"project {project_id} not found")
    columns = [
        ProjectColumn(column=name, location=EXPERIMENT, type=kind)
        for name, kind in EXPERIMENT_COLUMNS.items()
    ]
    recent = (
        select(Experiment.id, Experiment.config)
        .where(Experiment.project_id == project_id)
        .order_by(Experiment.id.desc())
        .limit(1000)
    )
    hparams: set[str] = set()
    exp_ids = []
    for exp_id, config in (await db.execute(recent)).all():
        exp_ids.append(exp_id)
        hparams.update(_hparam_names((config or {}).get("hyperparameters") or {}))
    columns += [
        ProjectColumn(column=f"hp.{n}", location=HYPERPARAMETERS, type=NUMBER, display_name=n)
        for n in sorted(hparams)
    ]
    metric_rows = await db.execute(
        select(Metric.metrics)
        .join(Trial, Trial.id == Metric.trial_id)
        .where(Trial.experiment_id.in_(exp_ids[:200]), Metric.group == "validation")
        .order_by(Metric.id.desc())
        .limit(200)
    )
    metrics: set[str] = set()
    for (body,) in metric_rows.all():
        metrics.update((body or {}).get("avg_metrics") or {})
    columns += [
        ProjectColumn(column=f"validation.{m}", location=VALIDATIONS, type=NUMBER, display_name=m)
        for m in sorted(metrics)
    ]
    return ProjectColumnsResponse(columns=columns)


async def _targets(db: Db, data: BulkExperimentsRequest, principal: Principal) -> list[int]:
    """The experiments a bulk request names: its ids, or everything its filter matches (of
    what the caller may view, under RBAC)."""
    visible = principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA)
    if data.search_filter is not None:
        found = await experiment_search.matching_ids(
            db,
            project_id=data.project_id or None,
            search=parse_filter(data.search_filter),
            cap=limits.BULK_EXPERIMENTS,
            workspaces=visible,
        )
    elif data.filters is not None:
        f = data.filters
        rows, _ = await experiments.list_experiments(
            db,
            experiments.ExperimentFilter(
                archived=f.archived,
                user_ids=tuple(f.user_ids or ()),
                states=tuple(f.states or ()),
                name=f.name,
                description=f.description,
                labels=tuple(f.labels or ()),
                project_id=f.project_id or data.project_id or None,
                id_not_in=tuple(f.excluded_experiment_ids or ()),
                workspaces=visible,
            ),
            sort_by="SORT_BY_ID",
            descending=False,
            offset=0,
            limit=limits.BULK_EXPERIMENTS + 1,
        )
        found = [r.id for r in rows]
    else:
        found = list(dict.fromkeys(data.experiment_ids))
    if data.search_filter is not None and data.filters and data.filters.excluded_experiment_ids:
        excluded = set(data.filters.excluded_experiment_ids)
        found = [i for i in found if i not in excluded]
    if len(found) > limits.BULK_EXPERIMENTS:
        raise InvalidArgument(
            f"the request matches more than {limits.BULK_EXPERIMENTS} experiments; narrow it"
        )
    if not found and data.search_filter is None and data.filters is None:
        raise InvalidArgument("name experimentIds, or give filters")
    return found


Action = Callable[[Db, User, int, datetime], Awaitable[None]]


async def _bulk(db: Db, user: User, ids: list[int], now: datetime, action: Action) -> list:  # type: ignore[type-arg]
    results = []
    for exp_id in ids:
        error = ""
        try:
            async with db.begin_nested():
                await action(db, user, exp_id, now)
        except DomainError as exc:
            error = str(exc)
        results.append(ExperimentActionResult(error=error, id=exp_id))
    return results


async def _kill(db: Db, user: User, exp_id: int, now: datetime) -> None:
    await experiment_control.stop(db, user, exp_id, now, kill=True)


async def _cancel(db: Db, user: User, exp_id: int, now: datetime) -> None:
    await experiment_control.stop(db, user, exp_id, now, kill=False)


async def _archive(db: Db, user: User, exp_id: int, now: datetime) -> None:
    await experiment_control.set_archived(db, user, exp_id, True)


async def _unarchive(db: Db, user: User, exp_id: int, now: datetime) -> None:
    await experiment_control.set_archived(db, user, exp_id, False)


def _bulk_route(verb: str, action: Action):  # type: ignore[no-untyped-def]
    @post(f"/api/v1/experiments/{verb}", status_code=200, name=f"bulk-{verb}")
    async def handler(
        data: JSONBody[BulkExperimentsRequest], db: Db, principal: Caller, ctx: Ctx
    ) -> BulkExperimentsResponse:
        ids = await _targets(db, data, principal)
        return BulkExperimentsResponse(
            results=await _bulk(db, principal.user, ids, ctx.clock(), action)
        )

    return handler


@post("/api/v1/experiments/move", status_code=200)
async def move_experiments(
    data: JSONBody[BulkExperimentsRequest], db: Db, principal: Caller, ctx: Ctx
) -> BulkExperimentsResponse:
    dest = data.destination_project_id
    destination = await db.get(Project, dest) if dest else None
    if destination is None:
        raise NotFound(f"destination project {dest} not found")

    async def move(db: Db, user: User, exp_id: int, now: datetime) -> None:
        # As one experiment's move: its job follows to the workspace, whose pools it may use.
        exp = await experiments.get_experiment(db, exp_id)
        await workspaces.move_experiment(db, user, exp, destination)

    ids = await _targets(db, data, principal)
    return BulkExperimentsResponse(results=await _bulk(db, principal.user, ids, ctx.clock(), move))


# Determined 0.38's own paths for the same actions (its client and web UI call these): the
# project in the path bounds them, so an id of another project's experiment only gets an error.
_PROJECT_EXPS = "/api/v1/projects/{project_id:int}/experiments"


def _in_project(data: BulkExperimentsRequest, project_id: int) -> BulkExperimentsRequest:
    if data.project_id not in (None, 0, project_id):
        raise InvalidArgument(
            f"body projectId {data.project_id} does not match the path {project_id}"
        )
    filters = data.filters
    if filters is not None:
        filters = filters.model_copy(update={"project_id": project_id})
    return data.model_copy(update={"project_id": project_id, "filters": filters})


def _only_in(project_id: int, action: Action) -> Action:
    async def scoped(db: Db, user: User, exp_id: int, now: datetime) -> None:
        exp = await experiments.get_experiment(db, exp_id)
        if exp.project_id != project_id:
            raise InvalidArgument(f"experiment {exp_id} is not in project {project_id}")
        await action(db, user, exp_id, now)

    return scoped


def _project_route(verb: str, action: Action):  # type: ignore[no-untyped-def]
    @post(f"{_PROJECT_EXPS}/{verb}", status_code=200, name=f"project-bulk-{verb}")
    async def handler(
        data: JSONBody[BulkExperimentsRequest],
        db: Db,
        principal: Caller,
        ctx: Ctx,
        project_id: Id32,
    ) -> BulkExperimentsResponse:
        scoped = _in_project(data, project_id)
        ids = await _targets(db, scoped, principal)
        act = _only_in(project_id, action)
        return BulkExperimentsResponse(
            results=await _bulk(db, principal.user, ids, ctx.clock(), act)
        )

    return handler


@post(f"{_PROJECT_EXPS}/move", status_code=200, name="project-bulk-move")
async def move_project_experiments(
    data: JSONBody[BulkExperimentsRequest], db: Db, principal: Caller, ctx: Ctx, project_id: Id32
) -> BulkExperimentsResponse:
    scoped = _in_project(data, project_id)
    dest = scoped.destination_project_id
    destination = await db.get(Project, dest) if dest else None
    if destination is None:
        raise NotFound(f"destination project {dest} not found")

    async def move(db: Db, user: User, exp_id: int, now: datetime) -> None:
        exp = await experiments.get_experiment(db, exp_id)
        await workspaces.move_experiment(db, user, exp, destination)

    ids = await _targets(db, scoped, principal)
    act = _only_in(project_id, move)
    return BulkExperimentsResponse(results=await _bulk(db, principal.user, ids, ctx.clock(), act))


@put(f"{_PROJECT_EXPS}/retain_logs", name="project-bulk-retain-logs")
async def retain_project_logs(
    data: JSONBody[RetainLogsRequest], db: Db, principal: Caller, ctx: Ctx, project_id: Id32
) -> BulkExperimentsResponse:
    """`numDays` of log retention for each experiment's trials (-1: forever)."""
    scoped = _in_project(data, project_id)

    async def retain(db: Db, user: User, exp_id: int, now: datetime) -> None:
        exp = await experiments.get_experiment(db, exp_id)
        experiments.can_modify(user, exp)
        tasks = await log_retention.trial_task_ids(db, [exp.id])
        await log_retention.set_retention(db, tasks, data.num_days)

    ids = await _targets(db, scoped, principal)
    act = _only_in(project_id, retain)
    return BulkExperimentsResponse(results=await _bulk(db, principal.user, ids, ctx.clock(), act))


BULK = [
    _bulk_route("pause", experiment_control.pause),
    _bulk_route("activate", experiment_control.activate),
    _bulk_route("kill", _kill),
    _bulk_route("cancel", _cancel),
    _bulk_route("archive", _archive),
    _bulk_route("unarchive", _unarchive),
]

PROJECT_BULK = [
    _project_route("pause", experiment_control.pause),
    _project_route("activate", experiment_control.activate),
    _project_route("kill", _kill),
    _project_route("cancel", _cancel),
    _project_route("archive", _archive),
    _project_route("unarchive", _unarchive),
    move_project_experiments,
    retain_project_logs,
]

ROUTES = [search_experiments, project_columns, move_experiments, *BULK, *PROJECT_BULK]
