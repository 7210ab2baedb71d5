"""Runs: Determined 0.38's flat view of trials across a project's experiments (SearchRuns), and
the actions on many runs at once. A run is a trial; what acts on an experiment (pause, resume,
archive, move) is allowed for a run only where the experiment is that run alone, as in
Determined ("part of a multi-trial experiment" otherwise)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Checkpoint, Experiment, Project, Trial, User, Workspace
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.experiment_filter import Search, SortKey
from controlplane.services import (
    experiment_control,
    experiment_deletion,
    experiment_search,
    workspaces,
)

MAX_BULK = 1000


async def search(
    session: AsyncSession,
    *,
    project_id: int | None,
    search: Search,
    sort: tuple[SortKey, ...],
    offset: int,
    limit: int,
    visible: frozenset[int] | None,
) -> tuple[list[tuple[Trial, Experiment, Project, Workspace]], int]:
    clauses = experiment_search.scope(project_id, search, visible)
    base = (
        select(Trial, Experiment, Project, Workspace)
        .join(Experiment, Experiment.id == Trial.experiment_id)
        .join(Project, Project.id == Experiment.project_id)
        .join(Workspace, Workspace.id == Project.workspace_id)
        .where(*clauses)
    )
    total = (
        await session.scalar(
            select(func.count(Trial.id))
            .join(Experiment, Experiment.id == Trial.experiment_id)
            .where(*clauses)
        )
        or 0
    )
    order = [
        (experiment_search.column_expr(k.column).desc() if k.descending else
         experiment_search.column_expr(k.column).asc()).nulls_last()
        for k in sort
        if k.column.name != "id"
    ]  # fmt: skip
    order.append(Trial.id.desc())
    rows = await session.execute(base.order_by(*order).offset(offset).limit(limit))
    return [tuple(r) for r in rows], total  # type: ignore[misc]


async def checkpoint_counts(session: AsyncSession, trial_ids: list[int]) -> dict[int, int]:
    if not trial_ids:
        return {}
    rows = await session.execute(
        select(Checkpoint.trial_id, func.count())
        .where(Checkpoint.trial_id.in_(trial_ids))
        .group_by(Checkpoint.trial_id)
    )
    return {trial_id: n for trial_id, n in rows}


async def trial_counts(session: AsyncSession, experiment_ids: list[int]) -> dict[int, int]:
    if not experiment_ids:
        return {}
    rows = await session.execute(
        select(Trial.experiment_id, func.count())
        .where(Trial.experiment_id.in_(experiment_ids))
        .group_by(Trial.experiment_id)
    )
    return {exp_id: n for exp_id, n in rows}


async def run_ids(
    session: AsyncSession, *, ids: list[int], filter_clauses: list[ColumnElement[bool]] | None
) -> list[int]:
    """The runs a bulk action names: its ids, or what its filter matches (at most MAX_BULK)."""
    if filter_clauses is not None:
        query = (
            select(Trial.id)
            .join(Experiment, Experiment.id == Trial.experiment_id)
            .where(*filter_clauses)
            .order_by(Trial.id)
            .limit(MAX_BULK + 1)
        )
        found = list(await session.scalars(query))
    else:
        found = list(dict.fromkeys(ids))
    if len(found) > MAX_BULK:
        raise InvalidArgument(f"the request names more than {MAX_BULK} runs; narrow it")
    if not found and filter_clauses is None:
        raise InvalidArgument("name runIds, or give a filter")
    return found


RunAction = Callable[[AsyncSession, User, Trial, Experiment, datetime], Awaitable[None]]


async def _run(
    session: AsyncSession, run_id: int, project_id: int | None
) -> tuple[Trial, Experiment]:
    trial = await session.get(Trial, run_id)
    if trial is None:
        raise NotFound(f"run {run_id} not found")
    exp = await session.get(Experiment, trial.experiment_id)
    assert exp is not None
    if project_id and exp.project_id != project_id:
        raise InvalidArgument(f"run {run_id} is not in project {project_id}")
    return trial, exp


async def _single(session: AsyncSession, run_id: int, exp: Experiment, verb: str) -> None:
    count = await session.scalar(select(func.count()).where(Trial.experiment_id == exp.id))
    if (count or 0) > 1:
        raise InvalidArgument(
            f"cannot {verb} run {run_id}: it is part of multi-trial experiment {exp.id} "
            f"({verb} the experiment instead)"
        )


async def act(
    session: AsyncSession,
    user: User,
    run_id: int,
    project_id: int | None,
    verb: str,
    now: datetime,
    destination: Project | None = None,
    skip_multitrial: bool = False,
) -> str:
    """Do `verb` to one run; the error text for its result ("" when done)."""
    trial, exp = await _run(session, run_id, project_id)
    if verb == "kill":
        await experiment_control.kill_trial(session, user, trial.id, now)
        return ""
    if verb == "move" and skip_multitrial:
        count = await session.scalar(select(func.count()).where(Trial.experiment_id == exp.id))
        if (count or 0) > 1:
            return ""  # skipped, as asked
    await _single(session, run_id, exp, verb)
    if verb == "pause":
        await experiment_control.pause(session, user, exp.id, now)
    elif verb == "resume":
        await experiment_control.activate(session, user, exp.id, now)
    elif verb in ("archive", "unarchive"):
        await experiment_control.set_archived(session, user, exp.id, verb == "archive")
    elif verb == "move":
        assert destination is not None
        await workspaces.move_experiment(session, user, exp, destination)
    elif verb == "delete":
        await experiment_deletion.begin_experiment_deletion(session, user, exp.id, now)
    else:
        raise ValueError(verb)
    return ""
