"""POST /api/v1/checkpoints/{uuid}/metadata (Determined's PostCheckpointMetadata): the body's
`checkpoint.metadata` replaces the checkpoint's metadata; the answer is the checkpoint. The
body's other checkpoint fields are ignored, as Determined ignores them (the SDK sends
placeholders), and the path names the checkpoint."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import post
from litestar.params import JSONBody, Parameter

from controlplane.api.deps import Caller, Db
from controlplane.api.schemas.common import Wire
from controlplane.api.schemas.reports import CheckpointResponse
from controlplane.api.serializers import checkpoint_out
from controlplane.services import checkpoint_metadata, checkpoints

Uuid = Annotated[str, Parameter(max_length=64)]


class CheckpointMetadataIn(Wire):
    metadata: dict[str, Any] = {}


class PostCheckpointMetadataRequest(Wire):
    checkpoint: CheckpointMetadataIn | None = None


@post("/api/v1/checkpoints/{checkpoint_uuid:str}/metadata", status_code=200)
async def post_checkpoint_metadata(
    data: JSONBody[PostCheckpointMetadataRequest], db: Db, principal: Caller, checkpoint_uuid: Uuid
) -> CheckpointResponse:
    metadata = data.checkpoint.metadata if data.checkpoint is not None else {}
    ckpt = await checkpoint_metadata.replace_metadata(db, principal, checkpoint_uuid, metadata)
    await db.flush()
    return CheckpointResponse(checkpoint=checkpoint_out(await checkpoints.view(db, ckpt)))


ROUTES = [post_checkpoint_metadata]
