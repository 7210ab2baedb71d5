"""Experiment use cases: create from YAML + context, list, change state, patch, archive."""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import String, cast, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.schemas.expconf import (
    ExperimentConfigError,
    expand_config,
    load_yaml_mapping,
    merge_configs,
    validate_experiment_config,
    with_cluster_checkpoint_storage,
)
from controlplane.db.models import (
    Experiment,
    ExperimentContext,
    Project,
    Template,
    Trial,
    User,
)
from controlplane.domain import config_policies as policy_rules
from controlplane.domain.command_names import default_experiment_name
from controlplane.domain.context_archive import ContextArchiveError, pack_context, parse_wire_files
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied
from controlplane.domain.states import RunState, stored_state_name
from controlplane.services import (
    config_policies,
    history,
    jobs,
    search,
    workspace_pools,
    workspaces,
)
from controlplane.services.pool_catalog import PoolCatalog
from controlplane.services.rbac_scopes import check_placement, experiments_in
from controlplane.services.reschedule import mark_reschedule


@dataclass(frozen=True)
class ExperimentDefaults:
    """What the master config contributes to every experiment."""

    checkpoint_storage: dict[str, Any]
    default_priority: int = 42
    # The master's pools: resolve a job's pool, refuse what no pool can hold. None in unit
    # tests that need no scheduling: every job then goes to the pool it names, or 'default'.
    pools: PoolCatalog | None = None


@dataclass(frozen=True)
class NewExperiment:
    config: str | dict[str, Any]
    files: list[dict[str, Any]] = field(default_factory=list)
    template: str | None = None
    project_id: int | None = None
    activate: bool = True
    validate_only: bool = False
    parent_id: int | None = None
    # A detached run's experiment (services/unmanaged.py): no entrypoint, no searcher trials.
    unmanaged: bool = False


@dataclass(frozen=True)
class Created:
    experiment: Experiment | None
    config: dict[str, Any]


def can_modify(user: User, exp: Experiment) -> None:
    """Everyone may read every experiment; only its owner or an admin may change it."""
    if not (user.admin or user.id == exp.owner_id):
        raise PermissionDenied(f"only the owner of experiment {exp.id} or an admin may change it")


async def get_experiment(session: AsyncSession, experiment_id: int) -> Experiment:
    exp = await session.get(Experiment, experiment_id)
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    return exp


async def _user_config(req: NewExperiment) -> tuple[dict[str, Any], dict[str, int] | None, str]:
    if isinstance(req.config, str):
        # Pure-Python YAML parsing of a large config takes seconds: keep it off the event loop.
        data, lines = await asyncio.to_thread(load_yaml_mapping, req.config)
        return data, lines, req.config
    if not isinstance(req.config, dict):
        raise InvalidArgument("config must be YAML text or a JSON object")
    return dict(req.config), None, json.dumps(req.config, indent=2)


async def build_config(
    session: AsyncSession, req: NewExperiment, defaults: ExperimentDefaults, now: datetime
) -> tuple[dict[str, Any], str, Project]:
    """Parse, merge the template under, place it in its project, merge the workspace's and the
    master's checkpoint storage under, validate and expand; errors name key paths and lines."""
    try:
        data, lines, text = await _user_config(req)
        if req.template:
            template = await session.get(Template, req.template)
            if template is None:
                raise NotFound(f"template '{req.template}' not found")
            data = merge_configs(data, template.config)
        project, ws = await workspaces.project_for_new_experiment(session, req.project_id, data)
        check_placement(session, ws.id)  # RBAC: where the config's names put it, not anywhere
        data = workspaces.with_default_pool(ws, data)
        policy = await config_policies.effective(session, ws.id, "EXPERIMENT")
        data = policy_rules.apply_invariant(data, policy)
        storage = workspaces.storage_under_experiments(ws, defaults.checkpoint_storage)
        # A partial block (e.g. only save_trial_latest) completes the cluster's, as in Determined.
        data = with_cluster_checkpoint_storage(data, storage)
        cfg = validate_experiment_config(data, lines, managed=not req.unmanaged)
        expanded = expand_config(
            cfg,
            master_checkpoint_storage=storage,
            default_priority=None,
            now_seconds=int(now.timestamp()),
            default_name=default_experiment_name(secrets.token_hex(8)),
        )
    except ExperimentConfigError as exc:
        raise InvalidArgument(f"invalid experiment config:\n{exc}") from exc
    policy_rules.check(expanded, policy)
    return expanded, text, project


async def create_experiment(
    session: AsyncSession,
    owner: User,
    req: NewExperiment,
    defaults: ExperimentDefaults,
    *,
    now: datetime,
) -> Created:
    expanded, text, project = await build_config(session, req, defaults, now)
    try:
        # Decoding and compressing up to 95 MiB is CPU work: do it in a worker thread.
        files = await asyncio.to_thread(parse_wire_files, req.files or [])
        archive = await asyncio.to_thread(pack_context, files)
    except ContextArchiveError as exc:
        raise InvalidArgument(f"invalid context directory: {exc}") from exc
    project_id = project.id
    resources = dict(expanded.get("resources") or {})
    slots = int(resources.get("slots_per_trial") or 1)
    pools = defaults.pools
    if pools is not None:
        pool = pools.resolve_pool(resources.get("resource_pool") or None, slots)
        pools.check_fits(pool, slots)
        default_priority = pools.default_priority(pool)
    else:
        pool = str(resources.get("resource_pool") or "default")
        default_priority = defaults.default_priority
    # A pool bound to other workspaces is not this one's to use (services/workspace_pools.py).
    await workspace_pools.check_available(
        session, pool, await workspaces.get_workspace(session, project.workspace_id)
    )
    if resources.get("priority") is None:
        resources["priority"] = default_priority
    resources["resource_pool"] = pool
    expanded = {**expanded, "resources": resources}
    if req.parent_id is not None:
        await get_experiment(session, req.parent_id)
    # Refuses what cannot be searched (an unknown name, a grid too big) before anything is made.
    searcher = search.new_searcher(expanded)
    if req.validate_only:
        return Created(experiment=None, config=expanded)

    state = RunState.ACTIVE if req.activate else RunState.PAUSED
    exp = Experiment(
        project_id=project_id,
        owner_id=owner.id,
        name=str(expanded.get("name") or ""),
        description=str(expanded.get("description") or ""),
        labels=list(expanded.get("labels") or []),
        state=state.value,
        config=expanded,
        original_config=text,
        searcher_type=str(expanded["searcher"]["name"]),
        resource_pool=pool,
        parent_id=req.parent_id,
        job_id=str(uuid.uuid4()),
        start_time=now,
        unmanaged=req.unmanaged,
    )
    session.add(exp)
    await session.flush()
    history.record_created(session, "experiment", str(exp.id), state, now)
    session.add(
        jobs.new_job(
            job_id=exp.job_id,
            job_type="EXPERIMENT",
            owner=owner,
            name=exp.name,
            entity_id=str(exp.id),
            workspace_id=project.workspace_id,
            resource_pool=pool,
            priority=resources.get("priority"),
            weight=float(resources.get("weight", 1.0)),
            max_slots=resources.get("max_slots"),
            now=now,
        )
    )
    context = ExperimentContext(
        experiment_id=exp.id,
        archive=archive,
        size_bytes=sum(len(f.content) for f in files),
        num_files=len(files),
    )
    parent_context = (
        await session.get(ExperimentContext, req.parent_id)
        if req.parent_id is not None and not req.files
        else None
    )
    if parent_context is not None:  # a fork without files runs its parent's code
        context.archive = parent_context.archive
        context.size_bytes = parent_context.size_bytes
        context.num_files = parent_context.num_files
    session.add(context)
    if req.unmanaged:  # its run creates its trials (PUT /api/v1/trials); nothing is scheduled
        return Created(experiment=exp, config=expanded)
    await search.start(session, exp, searcher, now)
    mark_reschedule(session, pool)
    return Created(experiment=exp, config=expanded)


@dataclass(frozen=True)
class ExperimentFilter:
    archived: bool | None = None
    usernames: tuple[str, ...] = ()
    user_ids: tuple[int, ...] = ()
    states: tuple[str, ...] = ()
    name: str | None = None
    description: str | None = None
    labels: tuple[str, ...] = ()
    project_id: int | None = None
    id_gt: int | None = None
    id_gte: int | None = None
    id_lt: int | None = None
    id_lte: int | None = None
    id_in: tuple[int, ...] = ()
    id_not_in: tuple[int, ...] = ()
    # Under RBAC, the workspaces the caller may view (None: every workspace).
    workspaces: frozenset[int] | None = None


SORT_COLUMNS = {
    "SORT_BY_UNSPECIFIED": Experiment.id,
    "SORT_BY_ID": Experiment.id,
    "SORT_BY_DESCRIPTION": Experiment.description,
    "SORT_BY_START_TIME": Experiment.start_time,
    "SORT_BY_END_TIME": Experiment.end_time,
    "SORT_BY_STATE": Experiment.state,
    "SORT_BY_PROGRESS": Experiment.progress,
    "SORT_BY_NAME": Experiment.name,
    "SORT_BY_FORKED_FROM": Experiment.parent_id,
    "SORT_BY_RESOURCE_POOL": Experiment.resource_pool,
    "SORT_BY_PROJECT_ID": Experiment.project_id,
    "SORT_BY_USER": Experiment.owner_id,
}


def _where(query: Any, f: ExperimentFilter) -> Any:
    if f.archived is not None:
        query = query.where(Experiment.archived == f.archived)
    if f.usernames or f.user_ids:
        owners = select(User.id).where(or_(User.username.in_(f.usernames), User.id.in_(f.user_ids)))
        query = query.where(Experiment.owner_id.in_(owners))
    if f.states:
        query = query.where(Experiment.state.in_([stored_state_name(s) for s in f.states]))
    if f.name:
        query = query.where(Experiment.name.contains(f.name, autoescape=True))
    if f.description:
        query = query.where(Experiment.description.contains(f.description, autoescape=True))
    for label in f.labels:
        # JSON text of a list holds each element quoted; portable across SQLite and JSONB.
        encoded = json.dumps(label)
        query = query.where(cast(Experiment.labels, String).contains(encoded, autoescape=True))
    if f.project_id:
        query = query.where(Experiment.project_id == f.project_id)
    for op, value in (("gt", f.id_gt), ("ge", f.id_gte), ("lt", f.id_lt), ("le", f.id_lte)):
        if value is not None:
            query = query.where(getattr(Experiment.id, f"__{op}__")(value))
    if f.id_in:
        query = query.where(Experiment.id.in_(f.id_in))
    if f.id_not_in:
        query = query.where(Experiment.id.not_in(f.id_not_in))
    if f.workspaces is not None:
        query = query.where(experiments_in(f.workspaces))
    return query


async def list_experiments(
    session: AsyncSession,
    f: ExperimentFilter,
    *,
    sort_by: str,
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[list[Experiment], int]:
    total = await session.scalar(_where(select(func.count(Experiment.id)), f)) or 0
    column = SORT_COLUMNS.get(sort_by, Experiment.id)
    order = [column.desc() if descending else column.asc()]
    if column is not Experiment.id:
        order.append(Experiment.id.desc() if descending else Experiment.id.asc())
    query = _where(select(Experiment), f).order_by(*order).offset(offset)
    if limit >= 0:
        query = query.limit(limit)
    return list(await session.scalars(query)), total


async def trial_counts(session: AsyncSession, experiment_ids: list[int]) -> dict[int, int]:
    if not experiment_ids:
        return {}
    rows = await session.execute(
        select(Trial.experiment_id, func.count(Trial.id))
        .where(Trial.experiment_id.in_(experiment_ids))
        .group_by(Trial.experiment_id)
    )
    return {exp_id: count for exp_id, count in rows.all()}


async def usernames(session: AsyncSession, user_ids: set[int]) -> dict[int, str]:
    if not user_ids:
        return {}
    rows = await session.execute(select(User.id, User.username).where(User.id.in_(user_ids)))
    return {uid: name for uid, name in rows.all()}
