"""Deleting experiments, with Determined 0.38's routes and shapes: DELETE
/api/v1/experiments/{id} (DeleteExperiment: an empty reply; the deletion may finish in the
background, services/experiment_deletion.py), DELETE /api/v1/projects/{id}/experiments/delete
(DeleteExperiments: one result per experiment, `error` empty where it went or is going) and
DELETE /api/v1/experiments/{id}/tensorboard-files (DeleteTensorboardFiles: the TensorBoard files
the experiment's trials synced to its checkpoint storage)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from litestar import delete
from litestar.params import JSONBody

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.experiment_search import _bulk, _in_project, _only_in, _targets
from controlplane.api.params import Id32
from controlplane.api.schemas.experiment_search import (
    BulkExperimentsRequest,
    BulkExperimentsResponse,
)
from controlplane.api.schemas.reports import Empty
from controlplane.db.models import User
from controlplane.domain.errors import Unavailable
from controlplane.services import checkpoint_files, experiment_deletion, experiments


def _wake(ctx: Ctx) -> None:
    if ctx.periodic is not None:
        ctx.periodic.wake_gc()


@delete("/api/v1/experiments/{experiment_id:int}", status_code=200)
async def delete_experiment(db: Db, principal: Caller, ctx: Ctx, experiment_id: Id32) -> Empty:
    done = await experiment_deletion.begin_experiment_deletion(
        db, principal.user, experiment_id, ctx.clock()
    )
    if not done:
        await db.commit()  # the woken GC pass must see the marks
        _wake(ctx)
    return Empty()


@delete("/api/v1/projects/{project_id:int}/experiments/delete", status_code=200)
async def delete_experiments(
    data: JSONBody[BulkExperimentsRequest], db: Db, principal: Caller, ctx: Ctx, project_id: Id32
) -> BulkExperimentsResponse:
    scoped = _in_project(data, project_id)
    ids = await _targets(db, scoped, principal)

    async def one(db: Db, user: User, exp_id: int, now: datetime) -> None:
        await experiment_deletion.begin_experiment_deletion(db, user, exp_id, now)

    results = await _bulk(db, principal.user, ids, ctx.clock(), _only_in(project_id, one))
    await db.commit()
    _wake(ctx)
    return BulkExperimentsResponse(results=results)


@delete("/api/v1/experiments/{experiment_id:int}/tensorboard-files", status_code=200)
async def delete_tensorboard_files(
    db: Db, principal: Caller, ctx: Ctx, experiment_id: Id32
) -> Empty:
    exp = await experiments.get_experiment(db, experiment_id)
    experiments.can_modify(principal.user, exp)
    storage: dict[str, Any] = dict(
        (exp.config or {}).get("checkpoint_storage") or ctx.experiment_defaults.checkpoint_storage
    )
    try:
        # Blocking file-system or HTTP calls: in a thread, and no database work meanwhile.
        await asyncio.to_thread(
            checkpoint_files.delete_tensorboard_files, storage, ctx.cluster_id, experiment_id
        )
    except checkpoint_files.CheckpointDeleteError as exc:
        raise Unavailable(
            f"the TensorBoard files of experiment {experiment_id} could not all be deleted: {exc}"
        ) from exc
    return Empty()


ROUTES = [delete_experiment, delete_experiments, delete_tensorboard_files]
