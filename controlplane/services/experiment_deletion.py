"""Deleting one experiment, as Determined 0.38's DeleteExperiment does: only an ended one, none
of whose checkpoints is registered as a model version or protected; its checkpoints' files go
through the checkpoint GC path first, then its rows.

An experiment without checkpoint files left goes at once. Otherwise it is marked DELETED (a
state Determined's enum has: the experiment is on its way out and no longer continues) and its
checkpoints are marked for deletion; the periodic GC job (`advance_experiment_deletions`,
called from services.deletions.advance_deletions) deletes the files outside any transaction
and drops the experiment once none is left. A checkpoint that could not be deleted keeps its
error (`det checkpoint describe`) and is retried, as a new DELETE also retries it at once.
Deleting a project that holds DELETED experiments finishes them the same way.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import Experiment, User
from controlplane.db.session import transaction
from controlplane.domain.deletion import blockers
from controlplane.domain.errors import Conflict
from controlplane.domain.states import RunState
from controlplane.services.checkpoint_files import CheckpointDeleter, delete_checkpoint_files
from controlplane.services.checkpoint_gc import BATCH, process_pending_deletions, request_deletion
from controlplane.services.deletions import _retry_now, drop_experiment, experiment_facts
from controlplane.services.experiments import can_modify, get_experiment

log = logging.getLogger("controlplane.experiment_deletion")


async def begin_experiment_deletion(
    session: AsyncSession, user: User, experiment_id: int, now: datetime
) -> bool:
    """Delete the experiment now when it has no checkpoint files (True), else start (False)."""
    exp = await get_experiment(session, experiment_id)
    can_modify(user, exp)
    (facts,) = await experiment_facts(session, [experiment_id])
    reasons = blockers([facts])
    if reasons:
        raise Conflict(f"experiment {experiment_id} cannot be deleted: " + "; ".join(reasons))
    if not facts.live:
        await drop_experiment(session, experiment_id)
        return True
    exp.state = RunState.DELETED.value
    await request_deletion(session, [u for u in facts.live if u not in facts.marked], now)
    await _retry_now(session, [experiment_id])
    await session.flush()
    return False


async def advance_experiment_deletions(
    factory: async_sessionmaker[AsyncSession],
    *,
    now: datetime,
    default_storage: dict[str, Any],
    deleter: CheckpointDeleter = delete_checkpoint_files,
) -> None:
    """One pass over the experiments being deleted: delete their checkpoints' files, then drop
    each that has none left."""
    async with transaction(factory) as session:
        ids = list(
            await session.scalars(
                select(Experiment.id)
                .where(Experiment.state == RunState.DELETED.value)
                .order_by(Experiment.id)
            )
        )
    for experiment_id in ids:
        while True:
            done = await process_pending_deletions(
                factory,
                now=now,
                default_storage=default_storage,
                deleter=deleter,
                experiment_id=experiment_id,
            )
            if len(done.deleted) + len(done.failed) + len(done.trimmed) < BATCH:
                break
        async with transaction(factory) as session:
            facts = await experiment_facts(session, [experiment_id])
            if facts and not facts[0].live:
                await drop_experiment(session, experiment_id)
                log.info("experiment %s deleted", experiment_id)
