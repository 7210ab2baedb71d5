"""Checkpoints: reported by tasks, described by users, patched by GC."""

from __future__ import annotations

from typing import Annotated

from litestar import delete, get, patch, post, put
from litestar.params import JSONBody, Parameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.schemas.reports import (
    CheckpointProtection,
    CheckpointResponse,
    CleanupLogsResponse,
    DeleteCheckpointsRequest,
    Empty,
    PatchCheckpointsRequest,
    RemoveCheckpointFilesRequest,
    ReportCheckpointRequest,
)
from controlplane.api.serializers import checkpoint_out
from controlplane.domain.errors import PermissionDenied
from controlplane.services import checkpoint_requests, checkpoints

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


@delete("/api/v1/checkpoints", status_code=200)
async def delete_checkpoints(
    data: JSONBody[DeleteCheckpointsRequest], db: Db, principal: Caller, ctx: Ctx
) -> Empty:
    """Determined's DeleteCheckpoints: the files go in the background (`det checkpoint
    describe` shows DELETED once they are gone, or the error while it retries)."""
    await checkpoint_requests.request_user_deletion(
        db, principal, data.checkpoint_uuids, ctx.clock()
    )
    await db.commit()
    if ctx.periodic is not None:
        ctx.periodic.wake_gc()
    return Empty()


@post("/api/v1/checkpoints/rm", status_code=200)
async def remove_checkpoint_files(
    data: JSONBody[RemoveCheckpointFilesRequest], db: Db, principal: Caller, ctx: Ctx
) -> Empty:
    """Determined's CheckpointsRemoveFiles: the files matching the globs go in the background
    (PARTIALLY_DELETED with the resources left; DELETED when none are); no globs re-reads the
    resources from storage."""
    await checkpoint_requests.request_user_deletion(
        db, principal, data.checkpoint_uuids, ctx.clock(), globs=data.checkpoint_globs
    )
    await db.commit()
    if ctx.periodic is not None:
        ctx.periodic.wake_gc()
    return Empty()


@put("/api/v1/checkpoints/{checkpoint_uuid:str}/protection", status_code=200)
async def protect_checkpoint(
    data: JSONBody[CheckpointProtection], db: Db, principal: Caller, checkpoint_uuid: Uuid
) -> CheckpointResponse:
    """Ours: a protected checkpoint is kept by every GC run and refuses deletion."""
    ckpt = await checkpoint_requests.set_protection(db, principal, checkpoint_uuid, data.protected)
    return CheckpointResponse(checkpoint=checkpoint_out(await checkpoints.view(db, ckpt)))


@post("/api/v1/cleanup_logs", status_code=200)
async def cleanup_logs(principal: Caller, ctx: Ctx) -> CleanupLogsResponse:
    """Determined's CleanupLogs: apply the master's retention_policy now."""
    if not principal.user.admin or principal.allocation is not None:
        raise PermissionDenied("only an admin may clean up task logs")
    removed = await ctx.periodic.cleanup_logs() if ctx.periodic is not None else 0
    return CleanupLogsResponse(removed_count=str(removed))


ROUTES = [
    report_checkpoint,
    get_checkpoint,
    patch_checkpoints,
    delete_checkpoints,
    remove_checkpoint_files,
    protect_checkpoint,
    cleanup_logs,
]
