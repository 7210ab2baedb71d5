"""The experiment list's search: a parsed filter tree and sort keys turned into one SQL query.

Columns: the experiment's own, `hp.<name>`, and `validation.<name>` (the best value any of its
trials reported; the searcher's metric reads the trials' denormalised `searcher_metric_value`, so
the common sort needs no metrics scan).

A filter on `hp.<name>` matches an experiment when any value it holds for that hyperparameter
matches: each value its trials sampled, and the config's `val` where it is a constant (so an
experiment whose trials do not exist yet still matches on its constants). "lr > 0.01" on a random
search is about the learning rates the trials ran with, not the range they were drawn from. A
sort on `hp.<name>` orders by the config's constant (searches over a range sort last).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import String, and_, case, cast, func, not_, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from controlplane.db.models import Experiment, Metric, Trial, TrialHparam, User
from controlplane.domain.experiment_filter import (
    EXPERIMENT,
    HYPERPARAMETERS,
    Column,
    Condition,
    Group,
    Search,
    SortKey,
)
from controlplane.services.dialect import json_number
from controlplane.services.rbac_scopes import experiments_in

_SMALLER_IS_BETTER = Experiment.config["searcher"]["smaller_is_better"].as_boolean()


def _best_searcher_value() -> Any:
    best_min = select(func.min(Trial.searcher_metric_value)).where(
        Trial.experiment_id == Experiment.id
    )
    best_max = select(func.max(Trial.searcher_metric_value)).where(
        Trial.experiment_id == Experiment.id
    )
    return case(
        (_SMALLER_IS_BETTER == False, best_max.scalar_subquery()),  # noqa: E712 (SQL, not Python)
        else_=best_min.scalar_subquery(),
    )


def _validation_value(name: str) -> Any:
    value = json_number(Metric.metrics["avg_metrics"][name])
    return (
        select(func.min(value))
        .join(Trial, Trial.id == Metric.trial_id)
        .where(
            Trial.experiment_id == Experiment.id,
            Metric.group == "validation",
            Metric.archived == False,  # noqa: E712
        )
        .scalar_subquery()
    )


def _experiment_column(name: str) -> Any:
    match name:
        case "user":
            return select(User.username).where(User.id == Experiment.owner_id).scalar_subquery()
        case "tags":
            return cast(Experiment.labels, String)
        case "numTrials":
            return (
                select(func.count(Trial.id))
                .where(Trial.experiment_id == Experiment.id)
                .scalar_subquery()
            )
        case "searcherMetricsVal":
            return _best_searcher_value()
    return {
        "id": Experiment.id,
        "name": Experiment.name,
        "description": Experiment.description,
        "state": Experiment.state,
        "searcherType": Experiment.searcher_type,
        "resourcePool": Experiment.resource_pool,
        "startTime": Experiment.start_time,
        "endTime": Experiment.end_time,
        "progress": Experiment.progress,
    }[name]


def _json_path(root: Any, dotted: str, numeric: bool) -> Any:
    for part in dotted.split("."):
        root = root[part]
    return json_number(root) if numeric else root.as_string()


def column_expr(column: Column, numeric: bool = True) -> Any:
    if column.location == EXPERIMENT:
        return _experiment_column(column.name)
    if column.location == HYPERPARAMETERS:
        return _json_path(Experiment.config["hyperparameters"], f"{column.name}.val", numeric)
    # The searcher's own metric is on the trials already (searcher_metric_value): the common
    # sort needs no scan of the metrics table.
    searcher_metric = Experiment.config["searcher"]["metric"].as_string()
    return case(
        (searcher_metric == column.name, _best_searcher_value()),
        else_=_validation_value(column.name),
    )


def _condition(c: Condition) -> ColumnElement[bool]:
    numeric = isinstance(c.value, float)
    if c.column.location == HYPERPARAMETERS:
        return _hparam_condition(c, numeric)
    expr = column_expr(c.column, numeric=numeric)
    value = c.value
    if c.column == Column(EXPERIMENT, "tags") and isinstance(value, str):
        value = json.dumps(value)
        if c.operator in ("=", "contains"):
            return expr.contains(value, autoescape=True)
        if c.operator in ("!=", "not contains"):
            return not_(expr.contains(value, autoescape=True))
    return _compare(expr, c.operator, value)


def _hparam_condition(c: Condition, numeric: bool) -> ColumnElement[bool]:
    """Any held value matches (module docstring). The trials' side reads trial_hparams through
    its (name, number, experiment_id) index, once for all experiments (an uncorrelated IN)."""
    constant = column_expr(c.column, numeric=numeric)
    of_name = select(TrialHparam.experiment_id).where(TrialHparam.name == c.column.name)
    if c.operator in ("is empty", "not empty"):
        held = or_(Experiment.id.in_(of_name), constant.is_not(None))
        return held if c.operator == "not empty" else not_(held)
    value: str | float | bool | None = c.value
    if numeric and c.operator not in ("contains", "not contains"):
        sampled = TrialHparam.number
    else:
        sampled = TrialHparam.text
        if isinstance(value, bool):
            value = "true" if value else "false"  # the JSON the row's text holds
    return or_(
        Experiment.id.in_(of_name.where(_compare(sampled, c.operator, value))),
        _compare(constant, c.operator, c.value),
    )


def _compare(expr: Any, operator: str, value: str | float | bool | None) -> ColumnElement[bool]:
    match operator:
        case "is empty":
            return expr.is_(None)
        case "not empty":
            return expr.is_not(None)
        case "contains":
            return cast(expr, String).contains(str(value), autoescape=True)
        case "not contains":
            return not_(cast(expr, String).contains(str(value), autoescape=True))
        case "=":
            return expr == value
        case "!=":
            return expr != value
        case "<":
            return expr < value
        case "<=":
            return expr <= value
        case ">":
            return expr > value
        case ">=":
            return expr >= value
    raise ValueError(operator)  # parse_filter admits no other operator


def where_of(group: Group) -> ColumnElement[bool]:
    parts = [where_of(c) if isinstance(c, Group) else _condition(c) for c in group.children]
    if not parts:
        return true()
    return and_(*parts) if group.conjunction == "and" else or_(*parts)


def _scope(
    project_id: int | None, search: Search, workspaces: frozenset[int] | None = None
) -> list[ColumnElement[bool]]:
    clauses = [where_of(search.where)]
    if project_id:
        clauses.append(Experiment.project_id == project_id)
    if workspaces is not None:  # under RBAC: the workspaces the caller may view
        clauses.append(experiments_in(workspaces))
    if not search.show_archived:
        clauses.append(Experiment.archived == False)  # noqa: E712
    return clauses


def scope(
    project_id: int | None, search: Search, workspaces: frozenset[int] | None = None
) -> list[ColumnElement[bool]]:
    """The WHERE clauses of a search on experiments (the runs view joins trials to them)."""
    return _scope(project_id, search, workspaces)


async def search_experiments(
    session: AsyncSession,
    *,
    project_id: int | None,
    search: Search,
    sort: tuple[SortKey, ...],
    offset: int,
    limit: int,
    workspaces: frozenset[int] | None = None,
) -> tuple[list[Experiment], int]:
    clauses = _scope(project_id, search, workspaces)
    total = await session.scalar(select(func.count(Experiment.id)).where(*clauses)) or 0
    order = []
    for key in sort:
        expr = column_expr(key.column)
        if key.column == Column(EXPERIMENT, "id"):
            # Never null; a plain ORDER BY id walks the (project_id, archived, id) index.
            order.append(expr.desc() if key.descending else expr.asc())
            continue
        order.append((expr.desc() if key.descending else expr.asc()).nulls_last())
    query = select(Experiment).where(*clauses).order_by(*order).offset(offset).limit(limit)
    return list(await session.scalars(query)), total


async def matching_ids(
    session: AsyncSession,
    *,
    project_id: int | None,
    search: Search,
    cap: int,
    workspaces: frozenset[int] | None = None,
) -> list[int]:
    """Ids of every experiment the filter matches (for "select all matching"), up to `cap`+1 so
    the caller can tell the filter matched too many."""
    query = (
        select(Experiment.id)
        .where(*_scope(project_id, search, workspaces))
        .order_by(Experiment.id)
        .limit(cap + 1)
    )
    return list(await session.scalars(query))


async def best_trials(session: AsyncSession, experiment_ids: list[int]) -> dict[int, Trial]:
    """Each experiment's trial with the best searcher metric (its direction from the config)."""
    if not experiment_ids:
        return {}
    rows = await session.execute(
        select(Trial, _SMALLER_IS_BETTER)
        .join(Experiment, Experiment.id == Trial.experiment_id)
        .where(Trial.experiment_id.in_(experiment_ids), Trial.searcher_metric_value.is_not(None))
    )
    best: dict[int, Trial] = {}
    for trial, smaller in rows.all():
        held = best.get(trial.experiment_id)
        better = smaller is not False
        value = trial.searcher_metric_value
        if held is None or (
            value < held.searcher_metric_value if better else value > held.searcher_metric_value
        ):
            best[trial.experiment_id] = trial
    return best
