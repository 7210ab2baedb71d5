"""Checkpoints: reported by tasks, described by users, patched by GC."""

from __future__ import annotations

from typing import Annotated

from litestar import get, patch, post
from litestar.params import JSONBody, Parameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.schemas.reports import (
    CheckpointResponse,
    Empty,
    PatchCheckpointsRequest,
    ReportCheckpointRequest,
)
from controlplane.api.serializers import checkpoint_out
from controlplane.services import checkpoints

Uuid = Annotated[str, Parameter(max_length=64)]


@post("/api/v1/checkpoints", status_code=200)
async def report_checkpoint(
    data: JSONBody[ReportCheckpointRequest], db: Db, principal: Caller, ctx: Ctx
) -> Empty:
    await checkpoints.report_checkpoint(
        db,
        principal,
        checkpoints.CheckpointReport(
            uuid=data.uuid,
            state=data.state,
            resources=data.resources,
            metadata=data.metadata,
            trial_id=data.training.trial_id if data.training else None,
            task_id=data.task_id,
            allocation_id=data.allocation_id,
            report_time=data.report_time,
            storage_id=data.storage_id,
        ),
        ctx.clock(),
    )
    return Empty()


@get("/api/v1/checkpoints/{checkpoint_uuid:str}")
async def get_checkpoint(db: Db, principal: Caller, checkpoint_uuid: Uuid) -> CheckpointResponse:
    ckpt = await checkpoints.get_checkpoint(db, checkpoint_uuid)
    return CheckpointResponse(checkpoint=checkpoint_out(await checkpoints.view(db, ckpt)))


@patch("/api/v1/checkpoints")
async def patch_checkpoints(
    data: JSONBody[PatchCheckpointsRequest], db: Db, principal: Caller
) -> Empty:
    await checkpoints.mark_deleted(
        db,
        principal,
        [(c.uuid, c.resources.resources if c.resources else None) for c in data.checkpoints],
    )
    return Empty()


ROUTES = [report_checkpoint, get_checkpoint, patch_checkpoints]
