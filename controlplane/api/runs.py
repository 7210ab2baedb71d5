"""Runs (Determined 0.38's flat view of trials): `POST /api/v1/runs` searches them across a
project with the experiment search's filter and sort; `/api/v1/runs/{kill,pause,resume,
archive,unarchive,move,delete}` act on many at once, one result per run."""

from __future__ import annotations

from datetime import datetime

from litestar import post
from litestar.params import JSONBody

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.runs import (
    FlatRun,
    FlatRunExperiment,
    MoveRunsRequest,
    RunActionResult,
    RunsActionRequest,
    RunsActionResponse,
    SearchRunsRequest,
    SearchRunsResponse,
)
from controlplane.db.models import Experiment, Project, Trial, Workspace
from controlplane.domain.errors import DomainError, NotFound
from controlplane.domain.experiment_filter import parse_filter, parse_sort
from controlplane.domain.rbac import Permission as P
from controlplane.domain.states import RunState
from controlplane.services import experiment_search, runs


def _run_out(
    trial: Trial, exp: Experiment, project: Project, ws: Workspace, trials: int, checkpoints: int
) -> FlatRun:
    config = exp.config or {}
    searcher = config.get("searcher") or {}
    end = trial.end_time
    return FlatRun(
        id=trial.id,
        start_time=trial.start_time,
        end_time=end,
        state=RunState(trial.state).wire,
        labels=list(exp.labels or []),
        checkpoint_count=checkpoints,
        searcher_metric_value=trial.searcher_metric_value,
        hyperparameters=trial.hparams,
        user_id=exp.owner_id,
        duration=int((end - trial.start_time).total_seconds()) if end else None,
        project_id=project.id,
        project_name=project.name,
        workspace_id=ws.id,
        workspace_name=ws.name,
        parent_archived=project.archived or ws.archived,
        archived=exp.archived,
        metadata=trial.run_metadata,
        experiment=FlatRunExperiment(
            id=exp.id,
            name=exp.name,
            description=exp.description or "",
            searcher_type=exp.searcher_type,
            searcher_metric=str(searcher.get("metric") or ""),
            resource_pool=str((config.get("resources") or {}).get("resource_pool") or ""),
            progress=float(exp.progress or 0.0),
            is_multitrial=trials > 1,
            unmanaged=bool(getattr(exp, "unmanaged", False)),
            forked_from=exp.parent_id,
        ),
    )


@post("/api/v1/runs", status_code=200)
async def search_runs(
    data: JSONBody[SearchRunsRequest], db: Db, principal: Caller
) -> SearchRunsResponse:
    limit = data.limit or 100
    rows, total = await runs.search(
        db,
        project_id=data.project_id or None,
        search=parse_filter(data.filter),
        sort=parse_sort(data.sort),
        offset=data.offset,
        limit=limit,
        visible=principal.workspaces(P.VIEW_EXPERIMENT_METADATA),
    )
    counts = await runs.trial_counts(db, sorted({exp.id for _, exp, _, _ in rows}))
    checkpoints = await runs.checkpoint_counts(db, [t.id for t, _, _, _ in rows])
    return SearchRunsResponse(
        runs=[
            _run_out(t, e, p, w, counts.get(e.id, 1), checkpoints.get(t.id, 0))
            for t, e, p, w in rows
        ],
        pagination=Pagination.of(data.offset, limit, len(rows), total),
    )


async def _targets(
    db: Db, principal: Caller, ids: list[int], flt: str | None, project: int | None
) -> list[int]:
    clauses = None
    if flt is not None:
        clauses = experiment_search.scope(
            project, parse_filter(flt), principal.workspaces(P.VIEW_EXPERIMENT_METADATA)
        )
    return await runs.run_ids(db, ids=ids, filter_clauses=clauses)


async def _each(
    db: Db,
    principal: Caller,
    now: datetime,
    ids: list[int],
    project_id: int | None,
    verb: str,
    **kw: object,
) -> RunsActionResponse:
    results = []
    for run_id in ids:
        try:
            async with db.begin_nested():
                error = await runs.act(db, principal.user, run_id, project_id, verb, now, **kw)  # type: ignore[arg-type]
        except DomainError as exc:
            error = str(exc)
        results.append(RunActionResult(error=error, id=run_id))
    return RunsActionResponse(results=results)


def _bulk(verb: str):  # type: ignore[no-untyped-def]
    @post(f"/api/v1/runs/{verb}", status_code=200, name=f"runs-{verb}")
    async def handler(
        data: JSONBody[RunsActionRequest], db: Db, principal: Caller, ctx: Ctx
    ) -> RunsActionResponse:
        project = data.project_id or None
        ids = await _targets(db, principal, data.run_ids, data.filter, project)
        return await _each(db, principal, ctx.clock(), ids, project, verb)

    return handler


@post("/api/v1/runs/move", status_code=200)
async def move_runs(
    data: JSONBody[MoveRunsRequest], db: Db, principal: Caller, ctx: Ctx
) -> RunsActionResponse:
    destination = await db.get(Project, data.destination_project_id)
    if destination is None:
        raise NotFound(f"destination project {data.destination_project_id} not found")
    source = data.source_project_id
    ids = await _targets(db, principal, data.run_ids, data.filter, source)
    return await _each(
        db,
        principal,
        ctx.clock(),
        ids,
        source,
        "move",
        destination=destination,
        skip_multitrial=data.skip_multitrial,
    )


@post("/api/v1/runs/delete", status_code=200)
async def delete_runs(
    data: JSONBody[RunsActionRequest], db: Db, principal: Caller, ctx: Ctx
) -> RunsActionResponse:
    """A single-trial experiment's run deletes the experiment (only ended ones; checkpoint files
    go through the GC path first, as DELETE /api/v1/experiments/{id})."""
    project = data.project_id or None
    ids = await _targets(db, principal, data.run_ids, data.filter, project)
    out = await _each(db, principal, ctx.clock(), ids, project, "delete")
    await db.commit()
    if ctx.periodic is not None:
        ctx.periodic.wake_gc()
    return out


ROUTES = [
    search_runs,
    *(_bulk(v) for v in ("kill", "pause", "resume", "archive", "unarchive")),
    move_runs,
    delete_runs,
]
