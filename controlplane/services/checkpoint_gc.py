"""Checkpoint GC: plan an experiment's deletions, then delete the files and record the outcome.

Three steps, so that no storage call runs inside a DB transaction and nothing is lost on a
crash: (1) a transaction reads the experiment and plans (controlplane.domain.checkpoint_gc), then
marks the checkpoints to go (`delete_requested_at`); (2) the files are deleted outside any
transaction, in a thread; (3) a transaction records each result: DELETED (resources emptied),
or the error, the attempt count and when to try again. A marked checkpoint stays in its state
until its files are really gone, so a failure is never reported as a deletion, and the periodic
job (controlplane.services.periodic_jobs) retries it, after a master restart too.

`collect_experiment_checkpoints` is the entry point for an experiment that ended or whose policy
changed; `history.move_experiment` requests it (experiments.gc_requested_at) and the periodic job
runs it, so it survives a master restart between the two.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import Checkpoint, Experiment, Metric, Trial
from controlplane.db.session import transaction
from controlplane.domain.checkpoint_gc import (
    CheckpointFacts,
    GcPlan,
    GcPolicy,
    ProtectReason,
    plan_gc,
    retry_delay,
)
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.states import RunState
from controlplane.services.checkpoint_files import (
    CheckpointDeleteError,
    CheckpointDeleter,
    CheckpointFileRemover,
    delete_checkpoint_files,
    remove_checkpoint_files,
)
from controlplane.services.model_registry import registered_checkpoint_uuids

log = logging.getLogger("controlplane.checkpoint_gc")

LIVE_STATES = ("COMPLETED", "PARTIALLY_DELETED")  # checkpoints that still have files
BATCH = 100

RegisteredProvider = Callable[[AsyncSession], Awaitable[set[str]]]


async def registered_in_models(session: AsyncSession) -> set[str]:
    """Checkpoints registered as model versions: never collected while registered."""
    return await registered_checkpoint_uuids(session)


@dataclass
class DeletionResults:
    deleted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    # rm: what is left, and whether files were removed (no globs only re-reads the resources)
    trimmed: dict[str, tuple[dict[str, str], bool]] = field(default_factory=dict)

    def add(self, other: DeletionResults) -> None:
        self.deleted.extend(other.deleted)
        self.failed.update(other.failed)
        self.trimmed.update(other.trimmed)


@dataclass(frozen=True)
class GcRun:
    experiment_id: int
    plan: GcPlan
    facts: dict[str, CheckpointFacts]
    deletions: DeletionResults = field(default_factory=DeletionResults)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


async def warm_start_uuids(session: AsyncSession) -> set[str]:
    """Checkpoints a searcher config names as the warm start of its trials: by uuid, or as the
    latest checkpoint of `source_trial_id` (what trial_launch resumes such trials from)."""
    uuids: set[str] = set()
    trial_ids: set[int] = set()
    for config in await session.scalars(select(Experiment.config)):
        searcher = (config or {}).get("searcher") or {}
        if isinstance(searcher.get("source_checkpoint_uuid"), str):
            uuids.add(searcher["source_checkpoint_uuid"])
        source = searcher.get("source_trial_id")
        if isinstance(source, int) and not isinstance(source, bool):
            trial_ids.add(source)
    for trial_id in trial_ids:
        latest = await session.scalar(
            select(Checkpoint.uuid)
            .where(Checkpoint.trial_id == trial_id, Checkpoint.state.in_(LIVE_STATES))
            .order_by(Checkpoint.steps_completed.desc(), Checkpoint.report_time.desc())
            .limit(1)
        )
        if latest:
            uuids.add(latest)
    return uuids


async def protected_reasons(
    session: AsyncSession, uuids: Iterable[str], registered: RegisteredProvider
) -> dict[str, set[ProtectReason]]:
    wanted = set(uuids)
    out: dict[str, set[ProtectReason]] = defaultdict(set)
    for uuid in wanted & await warm_start_uuids(session):
        out[uuid].add(ProtectReason.WARM_START)
    for uuid in wanted & await registered(session):
        out[uuid].add(ProtectReason.MODEL_REGISTRY)
    if wanted:
        rows = await session.scalars(
            select(Checkpoint.uuid).where(Checkpoint.uuid.in_(wanted), Checkpoint.protected)
        )
        for uuid in rows:
            out[uuid].add(ProtectReason.USER_PROTECTED)
    return dict(out)


async def plan_experiment(
    session: AsyncSession,
    experiment_id: int,
    registered: RegisteredProvider,
    *,
    counts: dict[str, int] | None = None,
) -> GcRun:
    """The plan under the experiment's policy, or with `counts` (save_* keys) laid over it
    (Determined's preview_gc)."""
    exp = await session.get(Experiment, experiment_id)
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    config = dict(exp.config or {})
    if counts:
        config["checkpoint_storage"] = {**(config.get("checkpoint_storage") or {}), **counts}
    try:
        policy = GcPolicy.from_config(config)
    except ValueError as exc:
        raise InvalidArgument(f"experiment {experiment_id}: {exc}") from None
    metric_name = ((exp.config or {}).get("searcher") or {}).get("metric")
    rows = (
        await session.execute(
            select(Checkpoint.uuid, Checkpoint.trial_id, Checkpoint.steps_completed)
            .join(Trial, Trial.id == Checkpoint.trial_id)
            .where(Trial.experiment_id == experiment_id, Checkpoint.state.in_(LIVE_STATES))
        )
    ).all()
    metrics: dict[tuple[int, int], float | None] = {}
    if rows and metric_name:
        validations = await session.execute(
            select(Metric.trial_id, Metric.total_batches, Metric.metrics)
            .join(Trial, Trial.id == Metric.trial_id)
            .where(
                Trial.experiment_id == experiment_id,
                Metric.group == "validation",
                Metric.archived.is_(False),
            )
            .order_by(Metric.id)
        )
        for trial_id, steps, body in validations:  # the last report at these steps wins
            value = _number(((body or {}).get("avg_metrics") or {}).get(metric_name))
            metrics[(trial_id, steps)] = value
    facts = {
        uuid: CheckpointFacts(uuid, trial_id, steps, metrics.get((trial_id, steps)))
        for uuid, trial_id, steps in rows
    }
    protected = await protected_reasons(session, facts, registered)
    return GcRun(experiment_id, plan_gc(facts.values(), policy, protected), facts)


async def request_deletion(
    session: AsyncSession, uuids: Iterable[str], now: datetime, globs: list[str] | None = None
) -> int:
    """Mark checkpoints to be deleted: whole (`globs` None) or the files matching `globs`.
    A whole-checkpoint mark already there keeps its time; it also replaces a pending glob one."""
    wanted = list(uuids)
    if not wanted:
        return 0
    marked = 0
    rows = await session.scalars(
        select(Checkpoint).where(Checkpoint.uuid.in_(wanted), Checkpoint.state.in_(LIVE_STATES))
    )
    for ckpt in rows:
        if ckpt.delete_requested_at is not None and ckpt.delete_globs is None:
            continue
        ckpt.delete_requested_at = now
        ckpt.delete_globs = globs
        ckpt.delete_retry_at = None
        marked += 1
    return marked


def _storage_of(config: dict[str, Any] | None, default: dict[str, Any]) -> dict[str, Any] | str:
    storage = (config or {}).get("checkpoint_storage")
    return storage if isinstance(storage, dict | str) and storage else default


async def process_pending_deletions(
    factory: async_sessionmaker[AsyncSession],
    *,
    now: datetime,
    default_storage: dict[str, Any],
    deleter: CheckpointDeleter = delete_checkpoint_files,
    remover: CheckpointFileRemover = remove_checkpoint_files,
    experiment_id: int | None = None,
    limit: int = BATCH,
) -> DeletionResults:
    """Delete the files of marked checkpoints that are due, and record each outcome."""
    async with transaction(factory) as session:
        query = (
            select(Checkpoint.uuid, Checkpoint.delete_globs, Experiment.config)
            .outerjoin(Trial, Trial.id == Checkpoint.trial_id)
            .outerjoin(Experiment, Experiment.id == Trial.experiment_id)
            .where(
                Checkpoint.delete_requested_at.is_not(None),
                Checkpoint.state.in_(LIVE_STATES),
                Checkpoint.protected.is_(False),
                or_(Checkpoint.delete_retry_at.is_(None), Checkpoint.delete_retry_at <= now),
            )
            .order_by(Checkpoint.delete_requested_at, Checkpoint.uuid)
            .limit(limit)
        )
        if experiment_id is not None:
            query = query.where(Trial.experiment_id == experiment_id)
        due = [
            (uuid, globs, _storage_of(config, default_storage))
            for uuid, globs, config in await session.execute(query)
        ]
    results = DeletionResults()
    for uuid, globs, storage in due:
        try:
            if globs is None:
                await asyncio.to_thread(deleter, storage, uuid)
                results.deleted.append(uuid)
            else:
                left = await asyncio.to_thread(remover, storage, uuid, list(globs))
                results.trimmed[uuid] = ({k: str(v) for k, v in left.items()}, bool(globs))
        except CheckpointDeleteError as exc:
            results.failed[uuid] = str(exc)[:2000]
    if not due:
        return results
    async with transaction(factory) as session:
        for uuid in results.deleted:
            await session.execute(
                update(Checkpoint)
                .where(Checkpoint.uuid == uuid)
                .values(
                    state="DELETED",
                    resources={},
                    deleted_at=now,
                    delete_error=None,
                    delete_retry_at=None,
                )
            )
        for uuid, (left, removed) in results.trimmed.items():
            # The files are gone (or re-read): the request is done and leaves no mark.
            ckpt = await session.get(Checkpoint, uuid)
            if ckpt is None:
                continue
            state = "PARTIALLY_DELETED" if removed else ckpt.state
            await session.execute(
                update(Checkpoint)
                .where(Checkpoint.uuid == uuid)
                .values(
                    state="DELETED" if not left else state,
                    resources=left,
                    deleted_at=now if not left else None,
                    delete_requested_at=now if not left else None,
                    delete_globs=None,
                    delete_attempts=0,
                    delete_error=None,
                    delete_retry_at=None,
                )
            )
        for uuid, error in results.failed.items():
            ckpt = await session.get(Checkpoint, uuid)
            if ckpt is None:
                continue
            ckpt.delete_attempts += 1
            ckpt.delete_error = error
            ckpt.delete_retry_at = now + retry_delay(ckpt.delete_attempts)
            log.warning(
                "checkpoint %s: deletion failed (attempt %d): %s", uuid, ckpt.delete_attempts, error
            )
    return results


async def collect_experiment_checkpoints(
    factory: async_sessionmaker[AsyncSession],
    experiment_id: int,
    *,
    now: datetime,
    default_storage: dict[str, Any],
    dry_run: bool = False,
    registered: RegisteredProvider = registered_in_models,
    deleter: CheckpointDeleter = delete_checkpoint_files,
) -> GcRun:
    """GC one experiment: plan, mark, delete, record. With `dry_run`, only the plan."""
    async with transaction(factory) as session:
        requested = await session.scalar(
            select(Experiment.gc_requested_at).where(Experiment.id == experiment_id)
        )
        run = await plan_experiment(session, experiment_id, registered)
        if dry_run:
            return run
        await request_deletion(session, run.plan.delete, now)
        # Cleared only if no new request (a policy PATCH) came in since it was read: that one
        # is planned again on the next pass, with the new policy.
        await session.execute(
            update(Experiment)
            .where(
                Experiment.id == experiment_id,
                Experiment.gc_requested_at.is_(None)
                if requested is None
                else Experiment.gc_requested_at == requested,
            )
            .values(gc_requested_at=None)
        )
    run.deletions.add(
        await process_pending_deletions(
            factory,
            now=now,
            default_storage=default_storage,
            deleter=deleter,
            experiment_id=experiment_id,
        )
    )
    return run


async def experiments_awaiting_gc(session: AsyncSession) -> list[int]:
    """Ended experiments whose GC was requested (a running one is collected when it ends)."""
    terminal = [s.value for s in RunState if s.is_terminal and s is not RunState.DELETED]
    rows = await session.scalars(
        select(Experiment.id)
        .where(Experiment.gc_requested_at.is_not(None), Experiment.state.in_(terminal))
        .order_by(Experiment.gc_requested_at, Experiment.id)
        .limit(BATCH)
    )
    return list(rows)


async def gc_tick(
    factory: async_sessionmaker[AsyncSession],
    *,
    now: datetime,
    default_storage: dict[str, Any],
    registered: RegisteredProvider = registered_in_models,
    deleter: CheckpointDeleter = delete_checkpoint_files,
) -> DeletionResults:
    """One run of the periodic job: collect requested experiments, then retry what is due."""
    async with transaction(factory) as session:
        pending = await experiments_awaiting_gc(session)
    results = DeletionResults()
    for experiment_id in pending:
        try:
            run = await collect_experiment_checkpoints(
                factory,
                experiment_id,
                now=now,
                default_storage=default_storage,
                registered=registered,
                deleter=deleter,
            )
            results.add(run.deletions)
        except InvalidArgument as exc:
            # A policy GC cannot read must not block every other experiment's GC.
            log.warning("%s; its checkpoints are kept", exc)
            async with transaction(factory) as session:
                await session.execute(
                    update(Experiment)
                    .where(Experiment.id == experiment_id)
                    .values(gc_requested_at=None)
                )
    results.add(
        await process_pending_deletions(
            factory, now=now, default_storage=default_storage, deleter=deleter
        )
    )
    return results
